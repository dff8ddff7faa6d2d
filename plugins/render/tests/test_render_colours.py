"""Colours are checked by the renderer in full, whatever the schemas let through."""

from __future__ import annotations

import pytest

from tollway_render import BarcodeRequest, QrRequest, RenderError, render_barcode, render_qr


@pytest.mark.parametrize("colour", ["000000\n", "0000000", "#00000g", " 000000"])
def test_colours_must_be_exactly_six_hex_digits(colour: str) -> None:
    # Built directly, as routes do after validation: the renderer checks in full anyway,
    # since the schemas' searched pattern lets a final newline through.
    with pytest.raises(RenderError, match="6 hex digits"):
        render_qr(QrRequest(data="x", dark=colour))
    with pytest.raises(RenderError, match="6 hex digits"):
        render_barcode(BarcodeRequest(data="Tollway", format="code128", light=colour))
