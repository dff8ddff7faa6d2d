"""The public QR API over HTTP: images decode, tiers and limits hold per backend,
caching, client addresses and the blocklist."""

from __future__ import annotations

import base64
import io
import time
from datetime import datetime
from typing import Any

import httpx
import pytest
import resvg_py
import zxingcpp
from PIL import Image

from tollway import Gateway
from tollway.testing import GatewayFactory, gateway_client
from tollway_qr.service import QrService

SMALL_TIERS = {
    "anonymous": {"limits": {"image_per_minute": 3, "json_per_minute": 2}},
    "free": {"limits": {"image_per_minute": 5, "json_per_minute": 4}},
    "pro": {"limits": {"image_per_minute": 7, "json_per_minute": 6}},
}


async def _gateway(factory: GatewayFactory, **settings: Any) -> Gateway:
    return await factory(plugins=["qr"], **settings)


async def _small(factory: GatewayFactory, **settings: Any) -> Gateway:
    return await factory(plugins=["qr"], products={"qr": {"plans": SMALL_TIERS}}, **settings)


async def _qr_key(gateway: Gateway, plan: str = "free", scopes: list[str] | None = None) -> str:
    account = await gateway.accounts.create_account("qr user", {"qr": plan})
    created = await gateway.accounts.create_key(account, scopes=scopes or ["qr:generate"])
    return created.key


def _pixels(content: bytes, media_type: str) -> Image.Image:
    if media_type.startswith("image/svg+xml"):
        content = bytes(resvg_py.svg_to_bytes(svg_string=content.decode()))
    with Image.open(io.BytesIO(content)) as image:
        return image.convert("RGB")


def _decode(image: Image.Image, light: tuple[int, int, int] = (255, 255, 255)) -> str:
    # zxing wants a quiet zone; margin 0 images get one added in the light colour.
    framed = Image.new("RGB", (image.width + 40, image.height + 40), light)
    framed.paste(image, (20, 20))
    [result] = zxingcpp.read_barcodes(framed)
    return str(result.text)


@pytest.mark.parametrize("fmt", ["png", "svg"])
@pytest.mark.parametrize(
    ("size", "margin", "ecc", "dark", "light"),
    [
        (50, 0, "L", "000000", "ffffff"),
        (200, 2, "M", "#1a237e", "#fff8e1"),
        (517, 4, "Q", "B71C1C", "e0f7fa"),
        (1000, 10, "H", "#000000", "#FFFFFF"),
    ],
)
async def test_images_decode_at_exact_size_and_colours(
    gateway_factory: GatewayFactory,
    fmt: str,
    size: int,
    margin: int,
    ecc: str,
    dark: str,
    light: str,
) -> None:
    gateway = await _gateway(gateway_factory)
    data = "https://example.com/menu?table=7" if size > 50 else "hi"
    params = {"data": data, "size": size, "format": fmt, "margin": margin, "ecc": ecc}
    params |= {"dark": dark, "light": light}
    async with gateway_client(gateway) as client:
        response = await client.get("/api/qr", params=params)
    assert response.status_code == 200, response.text
    expected_type = "image/png" if fmt == "png" else "image/svg+xml"
    assert response.headers["content-type"].startswith(expected_type)
    image = _pixels(response.content, response.headers["content-type"])
    assert image.size == (size, size)
    rgb = {
        name: tuple(int(value.removeprefix("#")[i : i + 2], 16) for i in (0, 2, 4))
        for name, value in (("dark", dark), ("light", light))
    }
    assert {colour for _, colour in image.getcolors(maxcolors=size * size)} == set(rgb.values())
    assert _decode(image, rgb["light"]) == data  # type: ignore[arg-type]


async def test_image_responses_are_cacheable_and_conditional(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _gateway(gateway_factory)
    async with gateway_client(gateway) as client:
        first = await client.get("/api/qr", params={"data": "cache me"})
        etag = first.headers["etag"]
        again = await client.get("/api/qr", params={"data": "cache me"})
        spelled = await client.get("/api/qr", params={"data": "cache me", "dark": "#000000"})
        unchanged = await client.get(
            "/api/qr", params={"data": "cache me"}, headers={"If-None-Match": f'W/"x", {etag}'}
        )
        other = await client.get("/api/qr", params={"data": "cache me too"})
    assert first.headers["cache-control"] == "public, max-age=3600"
    assert etag.startswith('"')
    assert etag.endswith('"')
    assert again.content == first.content
    assert again.headers["etag"] == spelled.headers["etag"] == etag
    assert unchanged.status_code == 304
    assert unchanged.content == b""
    assert unchanged.headers["etag"] == etag
    assert other.headers["etag"] != etag
    # Conditional and cached requests still count against the limit.
    remaining = [int(r.headers["x-ratelimit-remaining"]) for r in (first, again, unchanged)]
    assert remaining == [29, 28, 26]


async def test_identical_requests_are_rendered_once(gateway_factory: GatewayFactory) -> None:
    gateway = await _gateway(gateway_factory)
    async with gateway_client(gateway) as client:
        app_service = gateway.service(QrService)
        for _ in range(3):
            await client.get("/api/qr", params={"data": "once", "size": 300})
        await client.post("/api/qr/json", json={"data": "once", "size": 300})
    assert app_service.cache.misses == 1
    assert app_service.cache.hits == 3
    assert len(app_service.cache) == 1


@pytest.mark.parametrize("fmt", ["png", "svg"])
async def test_json_api_returns_the_spec_envelope(
    gateway_factory: GatewayFactory, fmt: str
) -> None:
    gateway = await _gateway(gateway_factory)
    async with gateway_client(gateway) as client:
        response = await client.post(
            "/api/qr/json",
            json={"data": "json please", "format": fmt, "dark": "1A237E", "ecc": "Q"},
        )
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    meta = body.pop("meta")
    svg = body.pop("svg", None)
    data_url = body.pop("dataUrl")
    assert body == {"success": True, "format": fmt, "width": 300, "height": 300}
    assert meta.pop("generatedAt").endswith("Z")
    assert meta == {
        "data": "json please",
        "size": 300,
        "dark": "#1a237e",
        "light": "#ffffff",
        "ecc": "Q",
        "margin": 2,
    }
    media_type, encoded = data_url.removeprefix("data:").split(";base64,")
    content = base64.b64decode(encoded)
    assert _decode(_pixels(content, media_type)) == "json please"
    if fmt == "svg":
        assert svg == content.decode()
    else:
        assert svg is None


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"data": ""},
        {"data": "x" * 2049},
        {"data": "x", "size": "49"},
        {"data": "x", "size": "1001"},
        {"data": "x", "size": "big"},
        {"data": "x", "format": "gif"},
        {"data": "x", "dark": "#12345"},
        {"data": "x", "light": "white"},
        {"data": "x", "margin": "11"},
        {"data": "x", "ecc": "X"},
        {"data": "x" * 2048, "ecc": "H"},
        {"data": "x", "dark": "000000", "light": "#000000"},
    ],
    ids=[
        "no-data",
        "empty",
        "too-long",
        "size-small",
        "size-big",
        "size-nan",
        "format",
        "dark",
        "light",
        "margin",
        "ecc",
        "over-capacity",
        "same-colours",
    ],
)
async def test_bad_image_parameters_are_400_with_docs(
    gateway_factory: GatewayFactory, params: dict[str, str]
) -> None:
    gateway = await _gateway(gateway_factory)
    async with gateway_client(gateway) as client:
        response = await client.get("/api/qr", params=params)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error", "docs"}
    assert body["error"]
    assert response.headers["x-ratelimit-remaining"] == "29"


async def test_over_capacity_names_the_capacity(gateway_factory: GatewayFactory) -> None:
    gateway = await _gateway(gateway_factory)
    async with gateway_client(gateway) as client:
        response = await client.get("/api/qr", params={"data": "x" * 2048, "ecc": "H"})
    assert "at most" in response.json()["error"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"data": 5},
        {"data": "x", "size": "300"},
        {"data": "x", "margin": True},
        {"data": "x", "colour": "red"},
        {"data": "x", "api_key": 7},
    ],
    ids=["no-data", "data-type", "size-string", "margin-bool", "unknown-field", "key-type"],
)
async def test_bad_json_bodies_are_400_with_docs(
    gateway_factory: GatewayFactory, body: dict[str, Any]
) -> None:
    gateway = await _gateway(gateway_factory)
    async with gateway_client(gateway) as client:
        response = await client.post("/api/qr/json", json=body)
        not_json = await client.post(
            "/api/qr/json", content=b"{", headers={"Content-Type": "application/json"}
        )
    for bad in (response, not_json):
        assert bad.status_code == 400
        assert set(bad.json()) == {"error", "docs"}
        assert "x-ratelimit-remaining" in bad.headers


def test_default_tiers_are_the_spec_numbers() -> None:
    from tollway import load_settings

    plans = Gateway(load_settings(environ={}, plugins=["qr"])).plans["qr"]
    limits = {name: dict(plan.limits) for name, plan in plans.items()}
    assert limits == {
        "anonymous": {"image_per_minute": 30, "json_per_minute": 20},
        "free": {"image_per_minute": 300, "json_per_minute": 200},
        "pro": {"image_per_minute": 3000, "json_per_minute": 2000},
    }
    assert "announced" in plans["pro"].description


async def _exhaust(client: httpx.AsyncClient, count: int, **request: Any) -> list[httpx.Response]:
    return [await client.request(**request) for _ in range(count)]


@pytest.mark.parametrize(
    ("kind", "limit", "request_args"),
    [
        ("image", 3, {"method": "GET", "url": "/api/qr", "params": {"data": "x"}}),
        ("json", 2, {"method": "POST", "url": "/api/qr/json", "json": {"data": "x"}}),
    ],
)
async def test_anonymous_callers_are_limited_per_address(
    gateway_factory: GatewayFactory, kind: str, limit: int, request_args: dict[str, Any]
) -> None:
    gateway = await _small(gateway_factory)
    async with gateway_client(gateway, "198.51.100.7") as client:
        responses = await _exhaust(client, limit + 1, **request_args)
        answered = time.time()  # before the neighbour's app starts: that takes a while
    async with gateway_client(gateway, "198.51.100.8") as neighbour:
        other = await neighbour.request(**request_args)
    admitted, refused = responses[:-1], responses[-1]
    assert [r.status_code for r in admitted] == [200] * limit
    assert [int(r.headers["x-ratelimit-remaining"]) for r in admitted] == list(
        range(limit - 1, -1, -1)
    )
    assert all(r.headers["x-ratelimit-limit"] == str(limit) for r in responses)
    assert refused.status_code == 429
    body = refused.json()
    assert set(body) == {"error", "hint", "resetAt"}
    assert "api_key" in body["hint"]
    reset_at = datetime.fromisoformat(body["resetAt"].replace("Z", "+00:00")).timestamp()
    assert int(refused.headers["x-ratelimit-reset"]) == int(reset_at)
    retry_after = int(refused.headers["retry-after"])
    assert 0 < retry_after <= 60
    assert reset_at - answered == pytest.approx(retry_after, abs=2)
    assert other.status_code == 200  # another address has its own window


async def test_image_and_json_windows_are_separate(gateway_factory: GatewayFactory) -> None:
    gateway = await _small(gateway_factory)
    async with gateway_client(gateway) as client:
        await _exhaust(client, 4, method="GET", url="/api/qr", params={"data": "x"})
        json = await client.post("/api/qr/json", json={"data": "x"})
    assert json.status_code == 200
    assert json.headers["x-ratelimit-limit"] == "2"


@pytest.mark.parametrize(("plan", "limit"), [("free", 5), ("pro", 7)])
async def test_keys_raise_the_limits_and_count_per_key(
    gateway_factory: GatewayFactory, plan: str, limit: int
) -> None:
    gateway = await _small(gateway_factory)
    key = await _qr_key(gateway, plan)
    async with gateway_client(gateway) as client:
        keyed = await _exhaust(
            client, limit + 1, method="GET", url="/api/qr", params={"data": "x", "api_key": key}
        )
        anonymous = await client.get("/api/qr", params={"data": "x"})
        in_body = await client.post("/api/qr/json", json={"data": "x", "api_key": key})
    assert [r.status_code for r in keyed] == [200] * limit + [429]
    assert keyed[0].headers["x-ratelimit-limit"] == str(limit)
    assert "Retry after" in keyed[-1].json()["hint"]
    # The key's window is its own: the address's anonymous window is untouched.
    assert anonymous.status_code == 200
    assert anonymous.headers["x-ratelimit-remaining"] == "2"
    assert in_body.headers["x-ratelimit-limit"] == str(limit - 1)


async def test_unknown_keys_are_401_and_count_against_the_address(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _small(gateway_factory)
    unknown = "tw_AAAAAAAA_" + "B" * 32
    async with gateway_client(gateway) as client:
        responses = await _exhaust(
            client, 4, method="GET", url="/api/qr", params={"data": "x", "api_key": unknown}
        )
        garbage = await client.post("/api/qr/json", json={"data": "x", "api_key": "nope"})
    assert [r.status_code for r in responses] == [401, 401, 401, 429]
    assert responses[0].json() == {"error": "api_key is unknown, revoked or expired"}
    assert responses[0].headers["x-ratelimit-remaining"] == "2"
    assert garbage.status_code == 401


async def test_revoked_keys_are_401(gateway_factory: GatewayFactory) -> None:
    gateway = await _small(gateway_factory)
    account = await gateway.accounts.create_account("qr user", {"qr": "free"})
    created = await gateway.accounts.create_key(account, scopes=["qr:generate"])
    await gateway.accounts.revoke_key(created.id)
    async with gateway_client(gateway) as client:
        response = await client.get("/api/qr", params={"data": "x", "api_key": created.key})
    assert response.status_code == 401


async def test_keys_that_may_not_be_used_in_urls_are_403(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=["qr", "code"])
    no_plan = await gateway.accounts.create_account("no plan")
    without_plan = (await gateway.accounts.create_key(no_plan, scopes=["qr:generate"])).key
    broad = await _qr_key(gateway, "free", scopes=["qr:generate", "code:qr:generate"])
    async with gateway_client(gateway) as client:
        refused_plan = await client.get("/api/qr", params={"data": "x", "api_key": without_plan})
        refused_broad = await client.get("/api/qr", params={"data": "x", "api_key": broad})
    assert refused_plan.status_code == 403
    assert "no public QR API plan" in refused_plan.json()["error"]
    assert refused_broad.status_code == 403
    assert "leaked URL" in refused_broad.json()["error"]


async def test_forwarded_for_is_believed_only_from_trusted_proxies(
    gateway_factory: GatewayFactory,
) -> None:
    untrusting = await _small(gateway_factory)
    trusting = await _small(gateway_factory, trusted_proxies=["10.0.0.0/8"])
    spoofed = {"X-Forwarded-For": "203.0.113.50"}
    async with gateway_client(untrusting, "198.51.100.9") as client:
        # Each request claims a new address; without trust they all share the peer's.
        statuses = [
            (
                await client.get(
                    "/api/qr", params={"data": "x"}, headers={"X-Forwarded-For": f"203.0.113.{n}"}
                )
            ).status_code
            for n in range(4)
        ]
    async with gateway_client(trusting, "10.1.2.3") as proxy:
        for _ in range(3):
            await proxy.get("/api/qr", params={"data": "x"}, headers=spoofed)
        same_client = await proxy.get("/api/qr", params={"data": "x"}, headers=spoofed)
        other_client = await proxy.get(
            "/api/qr", params={"data": "x"}, headers={"X-Forwarded-For": "203.0.113.51"}
        )
    assert statuses == [200, 200, 200, 429]
    assert same_client.status_code == 429
    assert other_client.status_code == 200


@pytest.mark.parametrize(
    "data",
    ["https://phishing.test/login", "http://secure.malware.test:8080/x"],
)
async def test_blocked_urls_are_451(gateway_factory: GatewayFactory, data: str) -> None:
    gateway = await _gateway(gateway_factory)
    async with gateway_client(gateway) as client:
        image = await client.get("/api/qr", params={"data": data})
        json = await client.post("/api/qr/json", json={"data": data})
    for response in (image, json):
        assert response.status_code == 451
        body = response.json()
        assert set(body) == {"error", "reason", "help"}
        assert "x-ratelimit-remaining" in response.headers


@pytest.mark.parametrize(
    "data",
    [
        "https://www.paypal.com/signin",
        "https://en.wikipedia.org/wiki/Phishing",
        "Hello, world",
        "WIFI:S:home;T:WPA;P:secret;;",
    ],
)
async def test_ordinary_content_passes_the_filter(
    gateway_factory: GatewayFactory, data: str
) -> None:
    gateway = await _gateway(gateway_factory)
    async with gateway_client(gateway) as client:
        response = await client.get("/api/qr", params={"data": data})
    assert response.status_code == 200


async def test_operators_add_their_own_blocklists(
    gateway_factory: GatewayFactory, tmp_path: Any
) -> None:
    extra = tmp_path / "ours.txt"
    extra.write_text("host competitor-scam.example.org\n")
    gateway = await gateway_factory(
        plugins=["qr"], products={"qr": {"settings": {"blocklists": [str(extra)]}}}
    )
    async with gateway_client(gateway) as client:
        blocked = await client.get(
            "/api/qr", params={"data": "https://x.competitor-scam.example.org/"}
        )
        default_still = await client.get("/api/qr", params={"data": "https://phishing.test/"})
    assert blocked.status_code == 451
    assert default_still.status_code == 451
