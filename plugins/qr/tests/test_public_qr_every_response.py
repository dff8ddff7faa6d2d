"""Every public QR response carries the caller's window (spec 8), including the answers
no QR handler gives (405, 413, 414, OPTIONS), which report it without counting; HEAD
is answered like GET without the bytes; errors name parameters as sent."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tollway import Gateway
from tollway.testing import GatewayFactory, gateway_client
from tollway_qr.admission import MAX_QUERY_BYTES

SMALL_TIERS = {
    "anonymous": {"limits": {"image_per_minute": 3, "json_per_minute": 2}},
    "free": {"limits": {"image_per_minute": 5, "json_per_minute": 4}},
}
WINDOW_HEADERS = {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"}
TOO_LONG = "x" * (MAX_QUERY_BYTES + 1)


async def _small(factory: GatewayFactory) -> Gateway:
    return await factory(plugins=["qr"], products={"qr": {"plans": SMALL_TIERS}})


async def _remaining(client: httpx.AsyncClient, **request: Any) -> int:
    response = await client.request(**request)
    return int(response.headers["x-ratelimit-remaining"])


REFUSED_BEFORE_ADMISSION = [
    ("image", 405, {"method": "PUT", "url": "/api/qr", "params": {"data": "x"}}),
    ("image", 405, {"method": "DELETE", "url": "/api/qr/"}),
    ("image", 405, {"method": "PROPFIND", "url": "/api/qr"}),
    ("json", 405, {"method": "GET", "url": "/api/qr/json", "params": {"data": "x"}}),
    ("image", 414, {"method": "GET", "url": "/api/qr", "params": {"data": TOO_LONG}}),
    ("image", 414, {"method": "HEAD", "url": "/api/qr", "params": {"data": TOO_LONG}}),
    (
        "json",
        413,
        {
            "method": "POST",
            "url": "/api/qr/json",
            "content": b'{"data": "' + b"x" * 10_500_000 + b'"}',
            "headers": {"Content-Type": "application/json"},
        },
    ),
    ("image", 204, {"method": "OPTIONS", "url": "/api/qr"}),
    ("json", 204, {"method": "OPTIONS", "url": "/api/qr/json"}),
]
_IDS = [
    "put",
    "delete",
    "unknown-method",
    "get-json",
    "414",
    "414-head",
    "413",
    "options",
    "o-json",
]


@pytest.mark.parametrize(("kind", "status", "request_args"), REFUSED_BEFORE_ADMISSION, ids=_IDS)
async def test_answers_before_admission_report_the_window_without_counting(
    gateway_factory: GatewayFactory, kind: str, status: int, request_args: dict[str, Any]
) -> None:
    gateway = await _small(gateway_factory)
    image = {"method": "GET", "url": "/api/qr", "params": {"data": "x"}}
    json = {"method": "POST", "url": "/api/qr/json", "json": {"data": "x"}}
    counted = image if kind == "image" else json
    limit = 3 if kind == "image" else 2
    async with gateway_client(gateway) as client:
        before = await _remaining(client, **counted)
        answer = await client.request(**request_args)
        after = await _remaining(client, **counted)
    assert answer.status_code == status
    assert set(answer.headers) >= WINDOW_HEADERS
    assert answer.headers["x-ratelimit-limit"] == str(limit)
    # Reported between two counted requests, and not counted itself.
    assert int(answer.headers["x-ratelimit-remaining"]) == before == after + 1
    if status >= 400 and request_args["method"] != "HEAD":
        assert answer.headers["content-type"] == "application/json"
        assert set(answer.json()) == {"error"}


async def test_405_names_the_methods_allowed(gateway_factory: GatewayFactory) -> None:
    gateway = await _small(gateway_factory)
    async with gateway_client(gateway) as client:
        image = await client.post("/api/qr", params={"data": "x"})
        json = await client.get("/api/qr/json")
    assert {m.strip() for m in image.headers["allow"].split(",")} == {"GET", "HEAD", "OPTIONS"}
    assert {m.strip() for m in json.headers["allow"].split(",")} == {"POST", "OPTIONS"}


async def test_reports_name_the_keys_window_and_never_retry_after(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _small(gateway_factory)
    account = await gateway.accounts.create_account("qr user", {"qr": "free"})
    key = (await gateway.accounts.create_key(account, scopes=["qr:generate"])).key
    async with gateway_client(gateway) as client:
        keyed = await client.put("/api/qr", params={"data": "x", "api_key": key})
        for _ in range(4):
            await client.get("/api/qr", params={"data": "x"})
        spent = await client.get("/api/qr", params={"data": "x"})
        reported = await client.put("/api/qr", params={"data": "x"})
    assert keyed.headers["x-ratelimit-limit"] == "5"
    assert keyed.headers["x-ratelimit-remaining"] == "5"
    assert spent.status_code == 429
    assert "retry-after" in spent.headers
    assert reported.status_code == 405
    assert reported.headers["x-ratelimit-remaining"] == "0"
    assert reported.headers["x-ratelimit-reset"] == spent.headers["x-ratelimit-reset"]
    assert "retry-after" not in reported.headers


async def test_head_answers_like_get_without_the_image(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=["qr"])
    params = {"data": "https://example.com/menu", "size": 300, "format": "svg"}
    async with gateway_client(gateway) as client:
        get = await client.get("/api/qr", params=params)
        head = await client.head("/api/qr", params=params)
        unchanged = await client.head(
            "/api/qr", params=params, headers={"If-None-Match": get.headers["etag"]}
        )
        invalid = await client.head("/api/qr", params={"data": "x", "size": 5})
    assert head.status_code == 200
    assert head.content == b""
    for name in ("etag", "cache-control", "content-type"):
        assert head.headers[name] == get.headers[name]
    assert head.headers["content-type"].startswith("image/svg+xml")
    assert int(head.headers["content-length"]) == len(get.content) > 0
    assert unchanged.status_code == 304
    assert unchanged.headers["etag"] == get.headers["etag"]
    assert invalid.status_code == 400
    # HEAD is admitted like GET: each one counts.
    remaining = [int(r.headers["x-ratelimit-remaining"]) for r in (get, head, unchanged, invalid)]
    assert remaining == [29, 28, 27, 26]


async def test_the_longest_valid_query_is_not_too_long(gateway_factory: GatewayFactory) -> None:
    gateway = await _small(gateway_factory)
    longest = {"data": "😀" * 2048, "dark": "#000000", "light": "#ffffff", "api_key": "k" * 200}
    async with gateway_client(gateway) as client:
        response = await client.get("/api/qr", params={**longest, "ecc": "L", "size": 1000})
    assert len(response.request.url.query) <= MAX_QUERY_BYTES
    # Read, not refused as too long (414): its (unknown) key is what is refused.
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("params", "named"),
    [({"data": "x" * 2049}, "data"), ({"data": "x", "size": "big"}, "size")],
    ids=["data", "size"],
)
async def test_400_names_the_parameter_as_sent(
    gateway_factory: GatewayFactory, params: dict[str, str], named: str
) -> None:
    gateway = await _small(gateway_factory)
    async with gateway_client(gateway) as client:
        response = await client.get("/api/qr", params=params)
    assert response.status_code == 400
    assert response.json()["error"].startswith(f"Invalid request: {named}: ")
    assert "content" not in response.json()["error"]
