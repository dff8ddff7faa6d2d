"""The rendered image's embedding as a data URL."""

from __future__ import annotations

import base64

from tollway_render import RenderedImage, data_url


def test_data_url() -> None:
    image = RenderedImage(b"\x89PNG-bytes", "image/png", 1, 1)
    assert data_url(image) == "data:image/png;base64," + base64.b64encode(b"\x89PNG-bytes").decode()
