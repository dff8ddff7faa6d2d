"""What a renderer is asked for: msgspec Structs with their rules as ``msgspec.Meta``.

Request structs forbid unknown fields and carry their constraints as annotations, so
``msgspec.json.decode(body, type=QrRequest)`` (or ``msgspec.convert``) enforces the whole
contract and raises ``msgspec.ValidationError`` on bad input. The code product takes them
as request bodies as they are; the public QR API builds its fields from the same
annotated types, so both accept exactly the same values.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = [
    "HEX_COLOR_PATTERN",
    "BarcodeFormat",
    "BarcodeRequest",
    "Ecc",
    "HexColor",
    "QrData",
    "QrFormat",
    "QrMargin",
    "QrRequest",
    "QrSize",
]

HEX_COLOR_PATTERN = "^#?[0-9a-fA-F]{6}$"

HexColor = Annotated[
    str,
    msgspec.Meta(
        pattern=HEX_COLOR_PATTERN,
        description="RGB colour as 6 hex digits, with or without a leading '#'.",
        examples=["000000", "#1a237e"],
    ),
]

QrFormat = Literal["png", "svg"]
Ecc = Literal["L", "M", "Q", "H"]

#: Linear (1D) barcode type ids, one per entry of ``LINEAR_TYPES``.
BarcodeFormat = Literal[
    "ean13",
    "ean8",
    "upca",
    "code128",
    "code39",
    "itf",
    "isbn13",
    "isbn10",
    "issn",
    "pzn",
    "jan",
    "ean14",
    "gs1_128",
    "codabar",
]

QrData = Annotated[str, msgspec.Meta(min_length=1, max_length=2048)]
QrSize = Annotated[
    int,
    msgspec.Meta(ge=50, le=1000, description="Width and height of the image in pixels."),
]
QrMargin = Annotated[int, msgspec.Meta(ge=0, le=10, description="Quiet zone in modules.")]


class QrRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A QR code to render: the code product's ``POST /v1/code/qr`` body as it is, and
    what the public QR API builds from its query or JSON fields."""

    data: QrData
    format: QrFormat = "png"
    size: QrSize = 200
    ecc: Ecc = "M"
    margin: QrMargin = 2
    dark: HexColor = "000000"
    light: HexColor = "ffffff"


class BarcodeRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A linear barcode to render, always as PNG: the code product's
    ``POST /v1/code/barcode`` body as it is."""

    data: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
    format: BarcodeFormat
    module_width: Annotated[
        int, msgspec.Meta(ge=1, le=10, description="Pixels per narrowest bar.")
    ] = 2
    height: Annotated[int, msgspec.Meta(ge=10, le=600, description="Bar height in pixels.")] = 100
    quiet_zone: Annotated[
        int, msgspec.Meta(ge=0, le=50, description="Blank modules left and right.")
    ] = 10
    include_text: bool = True
    dark: HexColor = "000000"
    light: HexColor = "ffffff"
