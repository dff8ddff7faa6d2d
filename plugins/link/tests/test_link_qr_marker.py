"""QR codes the code product draws of this deployment's short links carry the QR marker
(``tollway_qr_content``), so that their scans count as ``(qr)``; other text is left."""

from __future__ import annotations

import base64
import io

import httpx
import zxingcpp
from PIL import Image

from tollway.testing import ProductClientFactory

ORIGIN = "http://testserver"
"""The origin the in-process clients reach the gateway by (no trusted proxy)."""


def _decoded(image_bytes: bytes) -> str:
    with Image.open(io.BytesIO(image_bytes)) as image:
        [result] = zxingcpp.read_barcodes(image.convert("RGB"))
    return str(result.text)


async def _qr(client: httpx.AsyncClient, data: str) -> str:
    response = await client.post("/v1/code/qr", json={"data": data})
    assert response.status_code == 200, response.text
    return _decoded(response.content)


async def test_a_short_link_of_the_api_host_is_marked(
    product_client: ProductClientFactory,
) -> None:
    async with product_client("code", plan="pro", plugins=["code", "link"]) as code:
        assert await _qr(code.client, f"{ORIGIN}/l/Launch-2026") == (f"{ORIGIN}/l/Launch-2026?qr=1")
        # Not a short link of this deployment: another host, a reserved code, a query.
        for text in (
            "https://elsewhere.example/l/Launch-2026",
            f"{ORIGIN}/l/healthz",
            f"{ORIGIN}/l/Launch-2026?utm=x",
            f"{ORIGIN}/v1/link/links",
            "plain text",
        ):
            assert await _qr(code.client, text) == text


async def test_a_short_link_of_the_short_link_base_is_marked_in_batches_too(
    product_client: ProductClientFactory,
) -> None:
    settings = {"link": {"settings": {"short_link_base": "https://go.example.com"}}}
    async with product_client(
        "code", plan="pro", plugins=["code", "link"], products=settings
    ) as code:
        assert await _qr(code.client, "https://go.example.com/abc") == (
            "https://go.example.com/abc?qr=1"
        )
        # With a base set, the API host's /l/ form is not what links read.
        assert await _qr(code.client, f"{ORIGIN}/l/abc") == f"{ORIGIN}/l/abc"
        response = await code.client.post(
            "/v1/code/batch/qr",
            json={"items": [{"data": "https://go.example.com/abc"}, {"data": "hello"}]},
        )
        assert response.status_code == 200, response.text
        first, second = response.json()["data"]
        # The result says what was asked; the image holds what was encoded.
        assert first["data"] == "https://go.example.com/abc"
        assert _decoded(base64.b64decode(first["dataUrl"].split(",", 1)[1])) == (
            "https://go.example.com/abc?qr=1"
        )
        assert _decoded(base64.b64decode(second["dataUrl"].split(",", 1)[1])) == "hello"
