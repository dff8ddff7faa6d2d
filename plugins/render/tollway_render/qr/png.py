"""A laid-out QR symbol as a two-colour palette PNG."""

from __future__ import annotations

import io

from PIL import Image

from tollway_render.colours import rgb
from tollway_render.qr.layout import QrLayout

__all__ = ["draw_png"]


def draw_png(layout: QrLayout, size: int, dark: str, light: str) -> bytes:
    """The PNG bytes: ``size`` x ``size`` pixels of exactly ``dark`` and ``light``."""
    modules = len(layout.matrix)
    # Palette image: index 0 = light, 1 = dark; segno's matrix holds exactly 0/1 bytes.
    palette = [*rgb(light), *rgb(dark)]
    symbol = Image.frombytes("P", (modules, modules), b"".join(layout.matrix))
    symbol.putpalette(palette)
    scaled = modules * layout.scale
    if layout.scale != 1:
        symbol = symbol.resize((scaled, scaled), Image.Resampling.NEAREST)
    canvas = Image.new("P", (size, size), 0)
    canvas.putpalette(palette)
    canvas.paste(symbol, (layout.offset, layout.offset))
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return buffer.getvalue()
