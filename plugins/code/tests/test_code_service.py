"""The batch and the catalog: every image decoded with a real decoder (zxing-cpp),
SVGs rasterised with resvg first. The renderer's own tests are tollway_render's."""

from __future__ import annotations

import base64
import io
import typing
from typing import Any

import msgspec
import pytest
import resvg_py
import zxingcpp
from PIL import Image

from tollway_code.schemas import (
    BarcodeFormat,
    BatchQrItem,
    BatchQrRequest,
    QrFormat,
    QrRequest,
    TypesResponse,
)
from tollway_code.service import CODE_TYPES, render_batch
from tollway_render import RenderedImage, RenderError, render_qr

URL = "https://example.com/tollway/v1/code?id=12345&lang=de"
LINEAR_TYPES = [code_type for code_type in CODE_TYPES if code_type.kind == "linear"]


def to_pil(image: RenderedImage) -> Image.Image:
    """The rendered image as an RGB Pillow image (SVGs rasterised at their natural size)."""
    if image.media_type == "image/svg+xml":
        png = bytes(resvg_py.svg_to_bytes(svg_string=image.content.decode()))
    else:
        assert image.media_type == "image/png"
        png = image.content
    with Image.open(io.BytesIO(png)) as opened:
        assert opened.format == "PNG"
        return opened.convert("RGB")


def decode_qr(image: Image.Image) -> list[Any]:
    """The QR codes found; the images here have a quiet zone, so none is padded."""
    formats = zxingcpp.BarcodeFormat.QRCode
    return list(zxingcpp.read_barcodes(image, formats=formats, text_mode=zxingcpp.TextMode.Plain))


# --------------------------------------------------------------------------- batch


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_batch_round_trip(fmt: QrFormat) -> None:
    items = [
        BatchQrItem(data="first"),
        BatchQrItem(id="sku-42", data="Grüße 👋 日本"),
        BatchQrItem(data=URL),
    ]
    request = BatchQrRequest(items=items, format=fmt, size=250, dark="#1a237e", light="fff8e1")
    response = render_batch(request)
    assert response.total == 3
    assert [result.id for result in response.data] == ["1", "sku-42", "3"]
    media_type = "image/png" if fmt == "png" else "image/svg+xml"
    for item, result in zip(items, response.data, strict=True):
        assert (result.data, result.format, result.width, result.height) == (
            item.data,
            fmt,
            250,
            250,
        )
        prefix = f"data:{media_type};base64,"
        assert result.data_url.startswith(prefix)
        content = base64.b64decode(result.data_url.removeprefix(prefix), validate=True)
        pil = to_pil(RenderedImage(content, media_type, 250, 250))
        assert pil.size == (250, 250)
        assert [r.text for r in decode_qr(pil)] == [item.data]
    encoded = msgspec.json.decode(msgspec.json.encode(response))
    assert set(encoded["data"][0]) == {"id", "data", "format", "width", "height", "dataUrl"}


def test_batch_error_names_the_item() -> None:
    request = BatchQrRequest(
        items=[BatchQrItem(data="ok"), BatchQrItem(id="big", data="x" * 2048)], ecc="H"
    )
    with pytest.raises(RenderError, match=r"^item 2 \(id 'big'\): data is too long"):
        render_batch(request)


# --------------------------------------------------------------------------- catalog


def test_catalog() -> None:
    ids = [code_type.id for code_type in CODE_TYPES]
    assert len(CODE_TYPES) >= 11
    assert len(ids) == len(set(ids))
    assert CODE_TYPES[0].id == "qr"
    assert CODE_TYPES[0].endpoint == "/v1/code/qr"
    assert set(CODE_TYPES[0].output_formats) == {"png", "svg"}
    assert set(ids[1:]) == set(typing.get_args(BarcodeFormat))
    for code_type in LINEAR_TYPES:
        assert code_type.endpoint == "/v1/code/barcode"
        assert code_type.output_formats == ["png"]
        assert code_type.name
        assert code_type.description
        assert code_type.example
    qr_example = CODE_TYPES[0].example
    pil = to_pil(render_qr(QrRequest(data=qr_example)))
    assert [r.text for r in decode_qr(pil)] == [qr_example]
    body = msgspec.json.encode(TypesResponse(data=list(CODE_TYPES), total=len(CODE_TYPES)))
    assert msgspec.json.decode(body, type=TypesResponse).total == len(CODE_TYPES)
