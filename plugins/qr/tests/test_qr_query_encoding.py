"""The image API reads ``data`` as the UTF-8 text the client sent, raw or %-escaped:
the blocklist checks, and the QR code carries, exactly that text."""

from __future__ import annotations

import io

import httpx
import msgspec
import pytest
import zxingcpp
from PIL import Image

from tollway.testing import GatewayFactory, gateway_client, raw_request

BLOCKED = "https://phishing。test/"
"""A blocklisted host spelled with the ideographic full stop, which IDNA reads as a dot."""


async def get_raw(client: httpx.AsyncClient, path: str, query: bytes) -> tuple[int, bytes]:
    """``GET path?query`` with the query as raw bytes, through the client's ASGI app."""
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    answer = await raw_request(transport.app, "GET", path, query=query)
    return answer.status, answer.body


def _qr_text(png: bytes) -> str:
    with Image.open(io.BytesIO(png)) as image:
        framed = Image.new("RGB", (image.width + 40, image.height + 40), "white")
        framed.paste(image.convert("RGB"), (20, 20))
    [result] = zxingcpp.read_barcodes(framed)
    return str(result.text)


async def test_raw_utf8_cannot_slip_past_the_blocklist(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=["qr"])
    async with gateway_client(gateway) as client:
        raw = await get_raw(client, "/api/qr", b"data=" + BLOCKED.encode())
        escaped = await client.get("/api/qr", params={"data": BLOCKED})
        json_api = await client.post("/api/qr/json", json={"data": BLOCKED})
    assert raw[0] == escaped.status_code == json_api.status_code == 451
    assert msgspec.json.decode(raw[1]) == escaped.json() == json_api.json()
    assert "phishing.test" in json_api.json()["reason"]


@pytest.mark.parametrize(
    "text",
    [
        # All in Latin-1: read as Latin-1, the raw bytes would be encoded as other text.
        "Zoë, café à Noël",
        "Grüße 日本 ✓",
    ],
)
async def test_the_code_carries_the_text_sent_raw_or_escaped(
    gateway_factory: GatewayFactory, text: str
) -> None:
    gateway = await gateway_factory(plugins=["qr"])
    async with gateway_client(gateway) as client:
        status, image = await get_raw(client, "/api/qr", b"data=" + text.encode())
        escaped = await client.get("/api/qr", params={"data": text})
    assert status == escaped.status_code == 200
    assert _qr_text(image) == _qr_text(escaped.content) == text
    assert image == escaped.content


async def test_data_that_is_not_utf8_is_refused(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=["qr"])
    async with gateway_client(gateway) as client:
        escaped = await client.get("/api/qr?data=%FF")
        raw = await get_raw(client, "/api/qr", b"data=\xff")
        surrogate = await client.get("/api/qr?data=%ED%A0%80")
    expected = {"error": "Invalid request: the query string is not valid UTF-8", "docs": "/schema"}
    assert escaped.status_code == surrogate.status_code == raw[0] == 400
    assert escaped.json() == surrogate.json() == msgspec.json.decode(raw[1]) == expected
