"""Linear barcodes (python-barcode + Pillow) as PNG: one ``prepare`` step per symbology
(``numbers``, ``text``), listed in ``catalog``, drawn by the pixel-exact ``writer``."""

from __future__ import annotations

import io
from typing import Any

from barcode.errors import BarcodeError  # type: ignore[import-untyped]
from PIL import Image

from tollway_render.barcodes.catalog import LINEAR_TYPES, LinearType
from tollway_render.barcodes.writer import PixelImageWriter
from tollway_render.colours import check_colours, hex_colour
from tollway_render.errors import RenderError
from tollway_render.image import RenderedImage
from tollway_render.schemas import BarcodeRequest

__all__ = ["LINEAR_TYPES", "LinearType", "render_barcode"]

_LINEAR_BY_ID = {linear.id: linear for linear in LINEAR_TYPES}


def _preferred_font_px(module_width: int) -> int:
    return min(48, max(12, 9 * module_width))


def render_barcode(request: BarcodeRequest) -> RenderedImage:
    """Render a linear barcode as an RGB PNG.

    Pixel layout: ``quiet_zone * module_width`` blank pixels left and right, bars exactly
    ``height`` pixels tall from the top edge, each module ``module_width`` pixels wide;
    with ``include_text`` a gap and a line of text follow (the image is taller than
    ``height``).  Bars and background are exactly ``dark`` / ``light``; the text is
    anti-aliased.
    """
    linear = _LINEAR_BY_ID.get(request.format)
    if linear is None:
        raise RenderError(f"unknown barcode format {request.format!r}")
    check_colours(request.dark, request.light)
    font_px = _preferred_font_px(request.module_width)
    writer = PixelImageWriter(font_px)
    try:
        prepared = linear.prepare(request.data, writer)
        options: dict[str, Any] = {
            "module_width": request.module_width,
            "module_height": request.height,
            "quiet_zone": request.quiet_zone * request.module_width,
            "margin_top": 0,
            "margin_bottom": 0,
            "text_distance": max(2, font_px // 4),
            "foreground": hex_colour(request.dark),
            "background": hex_colour(request.light),
            "write_text": request.include_text,
            "center_text": True,
        }
        image: Image.Image = prepared.symbol.render(
            options, text=prepared.text if request.include_text else None
        )
    except RenderError:
        raise
    except (BarcodeError, ValueError, KeyError, IndexError) as error:
        raise RenderError(f"invalid data for {linear.name}: {error}") from None
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return RenderedImage(buffer.getvalue(), "image/png", image.width, image.height)
