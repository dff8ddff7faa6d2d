"""The code product over HTTP through the gateway: images decode, plans and errors hold."""

from __future__ import annotations

import base64
import io

import httpx
import pytest
import zxingcpp
from PIL import Image

from tollway.testing import ProductClientFactory


def _decoded(response: httpx.Response) -> str:
    with Image.open(io.BytesIO(response.content)) as image:
        [result] = zxingcpp.read_barcodes(image.convert("RGB"))
    return str(result.text)


async def test_qr_png_decodes_to_the_data(product_client: ProductClientFactory) -> None:
    async with product_client("code", plan="free") as code:
        response = await code.client.post(
            "/v1/code/qr",
            json={
                "data": "https://example.com/tollway",
                "size": 300,
                "ecc": "H",
                "dark": "#1a237e",
            },
        )
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    with Image.open(io.BytesIO(response.content)) as image:
        assert image.size == (300, 300)
    assert _decoded(response) == "https://example.com/tollway"
    assert response.headers["x-ratelimit-limit"] == "100"


async def test_qr_svg_is_served_as_svg(product_client: ProductClientFactory) -> None:
    async with product_client("code", plan="free") as code:
        response = await code.client.post(
            "/v1/code/qr", json={"data": "svg please", "format": "svg"}
        )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("image/svg+xml")
    assert response.text.lstrip().startswith("<")
    assert 'width="200"' in response.text


async def test_barcode_decodes_and_bad_data_says_why(product_client: ProductClientFactory) -> None:
    async with product_client("code", plan="free") as code:
        good = await code.client.post(
            "/v1/code/barcode", json={"data": "590123412345", "format": "ean13"}
        )
        bad = await code.client.post(
            "/v1/code/barcode", json={"data": "59012341234X", "format": "ean13"}
        )
    assert good.status_code == 200
    assert _decoded(good) == "5901234123457"
    assert bad.status_code == 400
    assert "EAN-13" in bad.json()["detail"]


async def test_data_too_long_for_the_ecc_level_is_400_with_capacity(
    product_client: ProductClientFactory,
) -> None:
    async with product_client("code", plan="free") as code:
        response = await code.client.post(
            "/v1/code/qr", json={"data": "x" * 2048, "ecc": "H", "size": 1000}
        )
    assert response.status_code == 400
    assert "at most" in response.json()["detail"]


@pytest.mark.parametrize(("plan", "status"), [("starter", 403), ("pro", 200)])
async def test_batch_needs_the_pro_plan(
    product_client: ProductClientFactory, plan: str, status: int
) -> None:
    async with product_client("code", plan=plan) as code:
        response = await code.client.post(
            "/v1/code/batch/qr",
            json={"items": [{"id": "a", "data": "first"}, {"data": "second"}], "size": 120},
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
    product_client: ProductClientFactory, items: list[dict[str, str]], duplicate: str
) -> None:
    async with product_client("code", plan="pro") as code:
        response = await code.client.post("/v1/code/batch/qr", json={"items": items})
    assert response.status_code == 400
    assert response.json()["detail"] == (
        f"Invalid request body: item ids must be unique within a batch; {duplicate}"
    )


async def test_batch_result_ids_are_strings_and_null_means_the_position(
    product_client: ProductClientFactory,
) -> None:
    items = [{"data": "one"}, {"id": None, "data": "two"}, {"id": "2nd", "data": "three"}]
    async with product_client("code", plan="pro") as code:
        response = await code.client.post("/v1/code/batch/qr", json={"items": items})
    assert response.status_code == 200
    assert [item["id"] for item in response.json()["data"]] == ["1", "2", "2nd"]


async def test_usage_reports_the_current_window(product_client: ProductClientFactory) -> None:
    async with product_client("code", plan="starter") as code:
        headers = code.owner.headers
        await code.client.post("/v1/code/qr", json={"data": "one"})
        response = await code.client.get("/v1/code/usage")
    usage = response.json()
    assert response.status_code == 200
    assert usage["plan"] == "starter"
    assert (usage["limit"], usage["used"], usage["remaining"]) == (1000, 2, 998)
    assert usage["window_start"].endswith("T00:00:00Z")
    assert usage["resets_at"].endswith("T00:00:00Z")
    assert usage["key"]["prefix"] == headers["Authorization"].removeprefix("Bearer ")[:11]


async def test_types_are_public_and_cover_ten_formats(product_client: ProductClientFactory) -> None:
    async with product_client("code") as code:
        response = await code.anonymous.get("/v1/code/types")
    body = response.json()
    assert response.status_code == 200
    assert body["total"] == len(body["data"]) >= 10
    assert {"qr", "ean13", "code128", "upca"} <= {item["id"] for item in body["data"]}


async def test_each_endpoint_needs_its_own_scope(product_client: ProductClientFactory) -> None:
    async with product_client("code", plan="pro", scopes=["code:usage:read"]) as code:
        response = await code.client.post("/v1/code/qr", json={"data": "x"})
    assert response.status_code == 403
    assert "code:qr:generate" in response.json()["detail"]
