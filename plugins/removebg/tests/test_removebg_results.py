"""Result URLs: signed, unguessable, expiring; JSON errors on an image route."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from removebg_setup import API, b64, picture, removebg_setup, tiny_settings
from sqlalchemy import func, select

from tollway import PublicOrigin, utcnow
from tollway.testing import GatewayFactory, gateway_client
from tollway_removebg.models import Job, Result
from tollway_removebg.service import RemoveBg


async def _count_results(setup_gateway: object) -> int:
    async with setup_gateway.database.transaction() as session:  # type: ignore[attr-defined]
        return int(await session.scalar(select(func.count()).select_from(Result)) or 0)


async def test_a_result_is_served_until_it_expires_then_410(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        service = setup.gateway.service(RemoveBg)
        start = utcnow()
        service.clock = lambda: start
        body = await setup.process(image_base64=b64(picture()))
        url = body["result_url"]
        service.clock = lambda: start + timedelta(hours=23, minutes=59)
        fresh = await setup.client.get(url)
        service.clock = lambda: start + timedelta(days=1, seconds=1)
        expired = await setup.client.get(url)
    assert fresh.status_code == 200
    assert fresh.headers["cache-control"] == "private, max-age=60"
    assert expired.status_code == 410
    assert expired.headers["content-type"] == "application/json"
    assert "expired" in expired.json()["detail"]


async def test_urls_not_signed_here_are_404_in_json(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        body = await setup.process(image_base64=b64(picture()))
        result_id, expires, signature = body["result_url"].rsplit("/", 1)[1].split(".")
        forged = [
            f"{result_id}.{int(expires) + 86_400}.{signature}",  # a longer life
            f"img_{'0' * 32}.{expires}.{signature}",  # another result
            f"{result_id}.{expires}.{'A' * len(signature)}",
            result_id,
            "....",
        ]
        answers = [await setup.client.get(f"{API}/results/{token}") for token in forged]
        genuine = await setup.client.get(body["result_url"])
    assert genuine.status_code == 200
    for answer in answers:
        assert answer.status_code == 404
        assert answer.headers["content-type"] == "application/json"
        assert answer.json() == {"detail": "No such result"}


async def test_result_urls_work_on_every_process_of_the_deployment(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    """Without ``result_secret`` the secret is made once and kept in the database."""
    # Made first: the factory empties the database for each new gateway.
    other = await gateway_factory(plugins=["removebg"], products=tiny_settings(removebg_tiny_model))
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        body = await setup.process(image_base64=b64(picture()))
        assert other.settings.database_url == setup.gateway.settings.database_url
        async with gateway_client(other) as client:
            download = await client.get(body["result_url"])
    assert download.status_code == 200


async def test_result_secret_setting_signs_the_urls(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    stranger = await gateway_factory(
        plugins=["removebg"], products=tiny_settings(removebg_tiny_model)
    )
    settings = {"result_secret": "s3cret-" * 6}
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=settings) as setup:
        body = await setup.process(image_base64=b64(picture()))
        async with gateway_client(stranger) as client:
            refused = await client.get(body["result_url"])
        accepted = await setup.client.get(body["result_url"])
    assert refused.status_code == 404
    assert accepted.status_code == 200


async def test_public_url_is_the_base_of_result_urls(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    settings = {"public_url": "https://images.example.com/"}
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=settings) as setup:
        body = await setup.process(image_base64=b64(picture()))
    assert body["result_url"].startswith("https://images.example.com/v1/removebg/results/img_")


@pytest.mark.parametrize(
    ("trusted", "headers", "origin"),
    [
        ([], {"Host": "evil.example"}, "http://testserver"),
        (
            [],
            {"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"},
            "http://testserver",
        ),
        (
            ["127.0.0.1"],
            {"X-Forwarded-Host": "api.example.com", "X-Forwarded-Proto": "https"},
            "https://api.example.com",
        ),
        (
            ["127.0.0.1"],
            {"X-Forwarded-Host": "evil.example, api.example.com:8443"},
            "http://api.example.com:8443",
        ),
        (["127.0.0.1"], {"X-Forwarded-Host": "evil.example/x?"}, "http://testserver"),
        (
            ["127.0.0.1"],
            {"X-Forwarded-Proto": "gopher", "Host": "evil.example"},
            "http://testserver",
        ),
    ],
    ids=["host", "untrusted-forwarded", "trusted", "nearest-proxy", "not-a-host", "bad-proto"],
)
async def test_result_urls_never_use_a_host_the_client_chose(
    gateway_factory: GatewayFactory,
    removebg_tiny_model: Path,
    trusted: list[str],
    headers: dict[str, str],
    origin: str,
) -> None:
    """Without ``public_url``: the origin trusted proxies report (the right-most, which
    the nearest proxy wrote), else the server's own address (``testserver`` in process)."""
    async with removebg_setup(
        gateway_factory, removebg_tiny_model, trusted_proxies=trusted
    ) as setup:
        processed = await setup.client.post(
            f"{API}/process",
            json={"image_base64": b64(picture())},
            headers={**setup.owner.headers, **headers},
        )
        submitted = await setup.client.post(
            f"{API}/batch",
            json={"images": [{"url": "https://a.example/x.png"}]},
            headers={**setup.owner.headers, **headers},
        )
        async with setup.gateway.database.transaction() as session:
            batch_base = await session.scalar(
                select(Job.base_url).where(Job.id == submitted.json()["job_id"])
            )
    assert processed.json()["result_url"].startswith(f"{origin}/v1/removebg/results/img_")
    assert batch_base == origin


@pytest.mark.parametrize(
    ("scheme", "server", "origin"),
    [
        ("http", ("10.0.0.5", 8000), "http://10.0.0.5:8000"),  # uvicorn: the local address
        ("http", ("0.0.0.0", "8000"), "http://0.0.0.0:8000"),  # granian: where it listens
        ("https", ("api.internal", 443), "https://api.internal"),
        ("http", ("::1", "80"), "http://[::1]"),
        ("http", None, "http://localhost"),
    ],
    ids=["uvicorn", "granian", "default-port", "ipv6", "no-address"],
)
def test_the_servers_own_origin_is_the_fallback(
    scheme: str, server: tuple[str, int | str] | None, origin: str
) -> None:
    scope = {
        "scheme": scheme,
        "server": server,
        "client": ("203.0.113.9", 5000),
        "headers": [(b"host", b"evil.example"), (b"x-forwarded-host", b"evil.example")],
    }
    assert PublicOrigin(["10.0.0.0/8"]).of(scope) == origin


async def test_expired_results_are_deleted(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        service = setup.gateway.service(RemoveBg)
        start = utcnow()
        service.clock = lambda: start
        await setup.process(image_base64=b64(picture()))
        await setup.process(image_base64=b64(picture()))
        kept = await _count_results(setup.gateway)
        service.clock = lambda: start + timedelta(days=2)
        await setup.process(image_base64=b64(picture()))
        after = await _count_results(setup.gateway)
    assert kept == 2
    assert after == 1
