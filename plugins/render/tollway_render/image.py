"""What every renderer returns: the encoded image and its size."""

from __future__ import annotations

import base64
from dataclasses import dataclass

__all__ = ["RenderedImage", "data_url"]


@dataclass(frozen=True, slots=True)
class RenderedImage:
    """An encoded image (PNG or SVG bytes) with its media type and pixel size."""

    content: bytes
    media_type: str
    width: int
    height: int


def data_url(image: RenderedImage) -> str:
    """``data:<media type>;base64,<content>`` for embedding the image in JSON or HTML."""
    return f"data:{image.media_type};base64,{base64.b64encode(image.content).decode('ascii')}"
