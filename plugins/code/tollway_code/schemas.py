"""Wire types (msgspec Structs) of the code-generation product.

Request structs forbid unknown fields and carry their constraints as ``msgspec.Meta``
annotations, so ``msgspec.json.decode(body, type=QrRequest)`` (or ``msgspec.convert``)
enforces the whole contract and raises ``msgspec.ValidationError`` on bad input. The
bodies of ``POST /qr`` and ``/barcode`` are the renderer's own requests, taken as they are.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from tollway_render.schemas import (
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
