"""The code product over HTTP through the gateway: images decode, plans and errors hold."""

from __future__ import annotations

import base64
import io

import httpx
import pytest
import zxingcpp
from PIL import Image

from tollway import Gateway
from tollway.testing import GatewayFactory, gateway_client

ALL_SCOPES = ["code:qr:generate", "code:barcode:generate", "code:batch:write", "code:usage:read"]


async def _key(gateway: Gateway, plan: str) -> dict[str, str]:
    account = await gateway.accounts.create_account("acme", {"code": plan})
    key = (await gateway.accounts.create_key(account, scopes=ALL_SCOPES)).key
    return {"Authorization": f"Bearer {key}"}


def _decoded(response: httpx.Response) -> str:
    with Image.open(io.BytesIO(response.content)) as image:
        [result] = zxingcpp.read_barcodes(image.convert("RGB"))
    return str(result.text)


async def test_qr_png_decodes_to_the_data(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=["code"])
    headers = await _key(gateway, "free")
    async with gateway_client(gateway) as client:
        response = await client.post(
            "/v1/code/qr",
            json={
                "data": "https://example.com/tollway",
                "size": 300,
                "ecc": "H",
                "dark": "#1a237e",
            },
            headers=headers,
        )
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    with Image.open(io.BytesIO(response.content)) as image:
        assert image.size == (300, 300)
    assert _decoded(response) == "https://example.com/tollway"
    assert response.headers["x-ratelimit-limit"] == "100"


async def test_qr_svg_is_served_as_svg(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=["code"])
    headers = await _key(gateway, "free")
    async with gateway_client(gateway) as client:
        response = await client.post(
            "/v1/code/qr", json={"data": "svg please", "format": "svg"}, headers=headers
        )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("image/svg+xml")
    assert response.text.lstrip().startswith("<")
    assert 'width="200"' in response.text


async def test_barcode_decodes_and_bad_data_says_why(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=["code"])
    headers = await _key(gateway, "free")
    async with gateway_client(gateway) as client:
        good = await client.post(
            "/v1/code/barcode", json={"data": "590123412345", "format": "ean13"}, headers=headers
        )
        bad = await client.post(
            "/v1/code/barcode", json={"data": "59012341234X", "format": "ean13"}, headers=headers
        )
    assert good.status_code == 200
    assert _decoded(good) == "5901234123457"
    assert bad.status_code == 400
    assert "EAN-13" in bad.json()["detail"]


async def test_data_too_long_for_the_ecc_level_is_400_with_capacity(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory(plugins=["code"])
    headers = await _key(gateway, "free")
    async with gateway_client(gateway) as client:
        response = await client.post(
            "/v1/code/qr", json={"data": "x" * 2048, "ecc": "H", "size": 1000}, headers=headers
        )
    assert response.status_code == 400
    assert "at most" in response.json()["detail"]


@pytest.mark.parametrize(("plan", "status"), [("starter", 403), ("pro", 200)])
async def test_batch_needs_the_pro_plan(
    gateway_factory: GatewayFactory, plan: str, status: int
) -> None:
    gateway = await gateway_factory(plugins=["code"])
    headers = await _key(gateway, plan)
    async with gateway_client(gateway) as client:
        response = await client.post(
            "/v1/code/batch/qr",
            json={"items": [{"id": "a", "data": "first"}, {"data": "second"}], "size": 120},
            headers=headers,
        )
    assert response.status_code == status
    if status == 403:
        assert "Pro plan" in response.json()["detail"]
        return
    body = response.json()
    assert body["total"] == 2
    assert [item["id"] for item in body["data"]] == ["a", "2"]
    for item in body["data"]:
        encoded = item["dataUrl"].removeprefix("data:image/png;base64,")
        with Image.open(io.BytesIO(base64.b64decode(encoded))) as image:
            assert image.size == (120, 120)
            [result] = zxingcpp.read_barcodes(image.convert("RGB"))
        assert result.text == item["data"]


@pytest.mark.parametrize(
    ("items", "duplicate"),
    [
        (
            [{"id": "a", "data": "first"}, {"id": "a", "data": "second"}],
            "'a' is the id of items 1 and 2",
        ),
        # A caller's "1" on item 2 would read like item 1's position.
        ([{"data": "first"}, {"id": "1", "data": "second"}], "'1' is the id of items 1 and 2"),
        (
            [{"id": "3", "data": "a"}, {"data": "b"}, {"data": "c"}],
            "'3' is the id of items 1 and 3",
        ),
    ],
)
async def test_batch_ids_must_be_unique_positions_included(
    gateway_factory: GatewayFactory, items: list[dict[str, str]], duplicate: str
) -> None:
    gateway = await gateway_factory(plugins=["code"])
    headers = await _key(gateway, "pro")
    async with gateway_client(gateway) as client:
        response = await client.post("/v1/code/batch/qr", json={"items": items}, headers=headers)
    assert response.status_code == 400
    assert response.json()["detail"] == (
        f"Invalid request body: item ids must be unique within a batch; {duplicate}"
    )


async def test_batch_result_ids_are_strings_and_null_means_the_position(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory(plugins=["code"])
    headers = await _key(gateway, "pro")
    items = [{"data": "one"}, {"id": None, "data": "two"}, {"id": "2nd", "data": "three"}]
    async with gateway_client(gateway) as client:
        response = await client.post("/v1/code/batch/qr", json={"items": items}, headers=headers)
    assert response.status_code == 200
    assert [item["id"] for item in response.json()["data"]] == ["1", "2", "2nd"]


async def test_usage_reports_the_current_window(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=["code"])
    headers = await _key(gateway, "starter")
    async with gateway_client(gateway) as client:
        await client.post("/v1/code/qr", json={"data": "one"}, headers=headers)
        response = await client.get("/v1/code/usage", headers=headers)
    usage = response.json()
    assert response.status_code == 200
    assert usage["plan"] == "starter"
    assert (usage["limit"], usage["used"], usage["remaining"]) == (1000, 2, 998)
    assert usage["window_start"].endswith("T00:00:00Z")
    assert usage["resets_at"].endswith("T00:00:00Z")
    assert usage["key"]["prefix"] == headers["Authorization"].removeprefix("Bearer ")[:11]


async def test_types_are_public_and_cover_ten_formats(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=["code"])
    async with gateway_client(gateway) as client:
        response = await client.get("/v1/code/types")
    body = response.json()
    assert response.status_code == 200
    assert body["total"] == len(body["data"]) >= 10
    assert {"qr", "ean13", "code128", "upca"} <= {item["id"] for item in body["data"]}


async def test_each_endpoint_needs_its_own_scope(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=["code"])
    account = await gateway.accounts.create_account("acme", {"code": "pro"})
    key = (await gateway.accounts.create_key(account, scopes=["code:usage:read"])).key
    headers = {"Authorization": f"Bearer {key}"}
    async with gateway_client(gateway) as client:
        response = await client.post("/v1/code/qr", json={"data": "x"}, headers=headers)
    assert response.status_code == 403
    assert "code:qr:generate" in response.json()["detail"]
