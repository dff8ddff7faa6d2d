"""Where a QR symbol's modules land on the square canvas: whole pixels, centred."""

from __future__ import annotations

from dataclasses import dataclass

import segno

from tollway_render.errors import RenderError

__all__ = ["QrLayout", "layout_of"]


@dataclass(frozen=True, slots=True)
class QrLayout:
    """Integer-pixel placement of a QR matrix on a size x size canvas."""

    matrix: tuple[bytearray, ...]
    scale: int  # pixels per module
    offset: int  # pixel position of the first matrix module (margin and centring included)


def layout_of(qr: segno.QRCode, size: int, margin: int) -> QrLayout:
    """The largest whole number of pixels per module that fits ``size``, margin included.

    Raises :class:`RenderError` when not even one pixel per module fits.
    """
    modules = len(qr.matrix)
    total = modules + 2 * margin
    scale = size // total
    if scale < 1:
        raise RenderError(
            f"size {size} px is too small for this data: the QR code (version {qr.version}, "
            f"{modules}x{modules} modules plus a margin of {margin}) needs at least {total} px"
        )
    # Centre the symbol; the remainder (< total px) goes to the quiet zone on both sides.
    offset = (size - total * scale) // 2 + margin * scale
    return QrLayout(qr.matrix, scale, offset)
