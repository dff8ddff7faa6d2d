"""Result URLs: signed, unguessable, expiring; JSON errors on an image route."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from removebg_setup import API, b64, picture, removebg_setup, tiny_settings
from sqlalchemy import func, select

from tollway.db import utcnow
from tollway.testing import GatewayFactory, gateway_client
from tollway_removebg.models import Result
from tollway_removebg.service import service_for


async def _count_results(setup_gateway: object) -> int:
    async with setup_gateway.database.transaction() as session:  # type: ignore[attr-defined]
        return int(await session.scalar(select(func.count()).select_from(Result)) or 0)


async def test_a_result_is_served_until_it_expires_then_410(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        service = service_for(setup.gateway)
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


async def test_expired_results_are_deleted(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        service = service_for(setup.gateway)
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
