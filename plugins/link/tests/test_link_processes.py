"""Clicks across processes, over real HTTP (PostgreSQL for the data, Redis between the
processes): the clicks of redirects a gateway answered survive that gateway being
killed once it sent them to the stream, and another process stores each exactly once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import redis.asyncio as redis
from clicks_client import BROWSER, unique_stream
from sqlalchemy import func, select

from tollway import Database
from tollway.testing import (
    Backend,
    GatewayFactory,
    GatewayProcess,
    WorkerProcess,
    deployment_settings,
    tenant,
)
from tollway_link.capture import RawClick
from tollway_link.models import Click, Link
from tollway_link.product import LINKS_WRITE
from tollway_link.stream import FIELD, GROUP

REDIRECTS = 40
_batch = msgspec.msgpack.Decoder(list[RawClick]).decode


async def _in_stream(client: redis.Redis, stream: str) -> int:
    """Clicks waiting in the stream."""
    entries: Any = await client.xrange(stream)
    return sum(len(_batch(fields[FIELD])) for _, fields in entries)


async def _stored(database_url: str, public_id: str) -> tuple[int, int]:
    """``(clicks stored, the link's counted clicks)``."""
    database = Database(database_url)
    try:
        async with database.transaction() as session:
            link = await session.scalar(select(Link).where(Link.public_id == public_id))
            assert link is not None
            rows = await session.scalar(select(func.count()).where(Click.link_id == link.id))
            return int(rows or 0), link.clicks
    finally:
        await database.dispose()


async def test_clicks_a_killed_gateway_sent_are_stored_once_by_another_process(
    backend: Backend, gateway_factory: GatewayFactory, tmp_path: Path
) -> None:
    if backend.redis_url is None:
        pytest.skip("several processes need the scale-out profile (PostgreSQL and Redis)")
    gateway = await gateway_factory(plugins=["link"], isolated=True)
    owner = await tenant(gateway, "acme", plans={"link": "pro"}, scopes=[LINKS_WRITE])
    stream = unique_stream()
    config = tmp_path / "link.toml"
    config.write_text(
        f'[products.link.settings]\nclick_stream = "{stream}"\nclick_flush_interval = 0.05\n'
    )
    settings = {**deployment_settings(gateway), "config": config}
    database_url = gateway.settings.database_url
    queue = redis.Redis.from_url(backend.redis_url)
    try:
        # The gateway only sends its clicks to the stream: with run_jobs off it stores none.
        with GatewayProcess(plugins=["link"], run_jobs=False, **settings) as first:
            async with httpx.AsyncClient(base_url=first.url, timeout=10) as client:
                created = await client.post(
                    "/v1/link/links",
                    json={"destination_url": "https://example.com/"},
                    headers=owner.headers,
                )
                assert created.status_code == 201, created.text
                public_id, code = created.json()["id"], created.json()["code"]
                for n in range(REDIRECTS):
                    followed = await client.get(
                        f"/l/{code}",
                        headers={"User-Agent": BROWSER, "Referer": f"https://s{n}.example/"},
                    )
                    assert followed.status_code == 302
            deadline = time.monotonic() + 20
            while await _in_stream(queue, stream) < REDIRECTS:
                assert time.monotonic() < deadline, "the gateway did not send its clicks"
                await asyncio.sleep(0.05)
            first.kill()  # SIGKILL: no clean-up runs
        assert await _in_stream(queue, stream) == REDIRECTS
        assert await _stored(database_url, public_id) == (0, 0)

        with WorkerProcess(plugins=["link"], **settings):
            deadline = time.monotonic() + 30
            while await queue.xlen(stream):
                assert time.monotonic() < deadline, "no process stored the clicks"
                await asyncio.sleep(0.05)
        assert await _stored(database_url, public_id) == (REDIRECTS, REDIRECTS)
        assert (await queue.xpending(stream, GROUP))["pending"] == 0
    finally:
        await queue.delete(stream)
        await queue.aclose()
