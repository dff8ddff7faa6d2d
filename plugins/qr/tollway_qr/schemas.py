"""Wire types of the public QR API; the QR fields and their rules are the code
product's, so both APIs accept exactly the same values."""

from __future__ import annotations

from typing import Annotated

import msgspec

from tollway_render import Ecc, HexColor, QrData, QrFormat, QrMargin, QrSize

ApiKey = Annotated[str, msgspec.Meta(max_length=200)]


class QrJsonRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /api/qr/json``: the image API's fields, size defaulting to 300."""

    data: QrData
    size: QrSize = 300
    format: QrFormat = "png"
    dark: HexColor = "000000"
    light: HexColor = "ffffff"
    margin: QrMargin = 2
    ecc: Ecc = "M"
    api_key: ApiKey | msgspec.UnsetType = msgspec.UNSET
    """Absent, not null, when no key is sent."""


class QrMeta(msgspec.Struct):
    data: str
    size: int
    dark: str
    light: str
    ecc: Ecc
    margin: int
    generatedAt: str


class QrJsonResponse(msgspec.Struct, omit_defaults=True):
    success: bool
    format: QrFormat
    width: int
    height: int
    dataUrl: str
    meta: QrMeta
    svg: str | None = None
    """The raw SVG document, for ``format: svg`` only."""
