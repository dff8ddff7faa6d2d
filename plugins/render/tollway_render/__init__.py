"""QR codes and linear barcodes as PNG or SVG, the renderer tollway's code and public QR
products share.

Pure functions: no web framework, no I/O besides in-memory buffers. Every input that
cannot be rendered raises :class:`RenderError`, a ``tollway.BadRequest`` whose ``str()``
is the client-facing reason. The modules behind this front: ``schemas`` (what may be
asked for), ``qr`` and ``barcodes`` (the two renderers), ``colours``, ``image`` and
``errors``.
"""

from __future__ import annotations

from tollway_render.barcodes import LINEAR_TYPES, LinearType, render_barcode
from tollway_render.errors import RenderError
from tollway_render.image import RenderedImage, data_url
from tollway_render.qr import render_qr
from tollway_render.schemas import (
    HEX_COLOR_PATTERN,
    BarcodeFormat,
    BarcodeRequest,
    Ecc,
    HexColor,
    QrData,
    QrFormat,
    QrMargin,
    QrRequest,
    QrSize,
)

__all__ = [
    "HEX_COLOR_PATTERN",
    "LINEAR_TYPES",
    "BarcodeFormat",
    "BarcodeRequest",
    "Ecc",
    "HexColor",
    "LinearType",
    "QrData",
    "QrFormat",
    "QrMargin",
    "QrRequest",
    "QrSize",
    "RenderError",
    "RenderedImage",
    "data_url",
    "render_barcode",
    "render_qr",
]
