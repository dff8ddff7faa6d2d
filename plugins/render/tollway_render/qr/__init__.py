"""QR codes (segno) as PNG or SVG: the symbol (``symbol``), its place on the canvas
(``layout``), and one drawing per format (``png``, ``svg``)."""

from __future__ import annotations

from tollway_render.colours import check_colours
from tollway_render.image import RenderedImage
from tollway_render.qr.layout import layout_of
from tollway_render.qr.png import draw_png
from tollway_render.qr.svg import draw_svg
from tollway_render.qr.symbol import make_symbol
from tollway_render.schemas import QrRequest

__all__ = ["render_qr"]


def render_qr(request: QrRequest) -> RenderedImage:
    """Render a QR code as a ``size`` x ``size`` PNG or SVG with crisp integer-pixel modules.

    The largest whole number of pixels per module that fits ``size`` (margin included) is
    used and the symbol is centred; the leftover pixels become extra light quiet zone.
    """
    size, dark, light = request.size, request.dark, request.light
    check_colours(dark, light)
    layout = layout_of(make_symbol(request.data, request.ecc), size, request.margin)
    if request.format == "svg":
        return RenderedImage(draw_svg(layout, size, dark, light), "image/svg+xml", size, size)
    return RenderedImage(draw_png(layout, size, dark, light), "image/png", size, size)
