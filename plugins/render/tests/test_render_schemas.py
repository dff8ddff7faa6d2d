"""The requests' defaults and rules, decoded from JSON and converted from Python."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from tollway_render import BarcodeRequest, QrRequest


def test_request_defaults_from_json() -> None:
    qr = msgspec.json.decode(b'{"data": "x"}', type=QrRequest)
    assert (qr.format, qr.size, qr.ecc, qr.margin, qr.dark, qr.light) == (
        "png",
        200,
        "M",
        2,
        "000000",
        "ffffff",
    )
    barcode = msgspec.json.decode(b'{"data": "x", "format": "code128"}', type=BarcodeRequest)
    assert (
        barcode.module_width,
        barcode.height,
        barcode.quiet_zone,
        barcode.include_text,
        barcode.dark,
        barcode.light,
    ) == (2, 100, 10, True, "000000", "ffffff")
    ok = msgspec.convert({"data": "x", "dark": "#1A237E", "light": "fff8e1"}, QrRequest)
    assert ok.dark == "#1A237E"


@pytest.mark.parametrize(
    ("struct", "payload"),
    [
        (QrRequest, {"data": "x", "size": 49}),
        (QrRequest, {"data": "x", "size": 1001}),
        (QrRequest, {"data": "x", "dark": "12345"}),
        (QrRequest, {"data": "x", "light": "#12345g"}),
        (QrRequest, {"data": "x", "dark": "##123456"}),
        (QrRequest, {"data": "x", "ecc": "X"}),
        (QrRequest, {"data": "x", "format": "jpg"}),
        (QrRequest, {"data": "x", "margin": 11}),
        (QrRequest, {"data": "x", "margin": -1}),
        (QrRequest, {"data": ""}),
        (QrRequest, {"data": "x" * 2049}),
        (QrRequest, {"data": "x", "colour": "red"}),
        (QrRequest, {"size": 200}),
        (BarcodeRequest, {"data": "x", "format": "qr"}),
        (BarcodeRequest, {"data": "x"}),
        (BarcodeRequest, {"data": "x" * 129, "format": "code128"}),
        (BarcodeRequest, {"data": "x", "format": "code128", "module_width": 0}),
        (BarcodeRequest, {"data": "x", "format": "code128", "module_width": 11}),
        (BarcodeRequest, {"data": "x", "format": "code128", "height": 9}),
        (BarcodeRequest, {"data": "x", "format": "code128", "height": 601}),
        (BarcodeRequest, {"data": "x", "format": "code128", "quiet_zone": 51}),
        (BarcodeRequest, {"data": "x", "format": "code128", "include_text": "yes"}),
        (BarcodeRequest, {"data": "x", "format": "code128", "dark": "black"}),
        (BarcodeRequest, {"data": "x", "format": "code128", "size": 200}),
    ],
)
def test_request_validation(struct: type[msgspec.Struct], payload: dict[str, Any]) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(payload, struct)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(msgspec.json.encode(payload), type=struct)
