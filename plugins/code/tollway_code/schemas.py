"""Wire types (msgspec Structs) of the code-generation product.

Request structs forbid unknown fields and carry their constraints as ``msgspec.Meta``
annotations, so ``msgspec.json.decode(body, type=QrRequest)`` (or ``msgspec.convert``)
enforces the whole contract and raises ``msgspec.ValidationError`` on bad input.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = [
    "BarcodeFormat",
    "BarcodeRequest",
    "BatchQrItem",
    "BatchQrRequest",
    "BatchQrResponse",
    "BatchQrResult",
    "CodeType",
    "Ecc",
    "HexColor",
    "KeyInfo",
    "QrFormat",
    "QrRequest",
    "TypesResponse",
    "UsageResponse",
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

#: Linear (1D) barcode type ids accepted by ``POST /v1/code/barcode``.
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
    """Body of ``POST /v1/code/qr``."""

    data: QrData
    format: QrFormat = "png"
    size: QrSize = 200
    ecc: Ecc = "M"
    margin: QrMargin = 2
    dark: HexColor = "000000"
    light: HexColor = "ffffff"


class BarcodeRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/code/barcode``; the output is always PNG."""

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


class BatchQrItem(msgspec.Struct, forbid_unknown_fields=True):
    """One QR code of a batch; without an ``id`` its result's is its 1-based position."""

    data: QrData
    id: Annotated[str, msgspec.Meta(max_length=64)] | None = None


class BatchQrRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/code/batch/qr``: many payloads sharing one set of options."""

    items: Annotated[list[BatchQrItem], msgspec.Meta(min_length=1, max_length=100)]
    format: QrFormat = "png"
    size: QrSize = 200
    ecc: Ecc = "M"
    margin: QrMargin = 2
    dark: HexColor = "000000"
    light: HexColor = "ffffff"


class BatchQrResult(msgspec.Struct):
    """One rendered QR code of a batch, embedded as a base64 data URL."""

    id: str
    """The item's ``id``, else its 1-based position as a string; unique in the batch."""
    data: str
    format: QrFormat
    width: int
    height: int
    data_url: str = msgspec.field(name="dataUrl")


class BatchQrResponse(msgspec.Struct):
    data: list[BatchQrResult]
    total: int


class CodeType(msgspec.Struct, frozen=True):
    """One entry of the ``GET /v1/code/types`` catalog."""

    id: str
    name: str
    kind: Literal["2d", "linear"]
    endpoint: Literal["/v1/code/qr", "/v1/code/barcode"]
    output_formats: list[str]
    description: str
    example: str


class TypesResponse(msgspec.Struct):
    data: list[CodeType]
    total: int


class KeyInfo(msgspec.Struct):
    id: int
    prefix: str
    name: str


class UsageResponse(msgspec.Struct):
    """Body of ``GET /v1/code/usage``; timestamps are ISO 8601 UTC strings."""

    product: str
    plan: str
    limit: int
    used: int
    remaining: int
    window_start: str
    resets_at: str
    key: KeyInfo
