"""Redis stopped under a running gateway process: the configured failure policy holds
for keyed routes and the public QR API alike, nothing answers 500, and limits come
back without a restart once Redis does. (``GET /v1/code/usage`` reads the counters
themselves, so it answers 503 whatever the policy; it is left out here.)"""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest

from tollway.testing import Backend, GatewayFactory, GatewayProcess, RedisServer

pytestmark = pytest.mark.slow


async def _statuses(client: httpx.AsyncClient, url: str, rounds: int = 20) -> list[httpx.Response]:
    responses = []
    for n in range(rounds):
        responses.append(await client.post(f"{url}/v1/code/qr", json={"data": f"k{n}"}))
        responses.append(await client.get(f"{url}/api/qr", params={"data": f"d{n}"}))
    return responses


@pytest.mark.parametrize("policy", ["open", "closed"])
async def test_redis_stopped_mid_run(
    backend: Backend, gateway_factory: GatewayFactory, own_redis: RedisServer, policy: str
) -> None:
    if backend.redis_url is None:
        pytest.skip("the scale-out profile is PostgreSQL and Redis")
    gateway = await gateway_factory(plugins=["code", "qr"], isolated=True)
    account = await gateway.accounts.create_account("acme", {"code": "enterprise", "qr": "free"})
    key = (await gateway.accounts.create_key(account, name="ci", all_scopes=True)).key
    settings = {
        "database_url": gateway.settings.database_url,
        "redis_url": own_redis.url,
        "rate_limit_failure": policy,
        "job_queue": "memory",  # this test is about the limiter
    }
    with GatewayProcess(plugins=["code", "qr"], **settings) as server:
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(headers=headers, timeout=10) as client:
            before = await _statuses(client, server.url, rounds=3)
            own_redis.stop()
            during = await _statuses(client, server.url)
            own_redis.start()
            await asyncio.sleep(0.5)
            after = await _statuses(client, server.url, rounds=3)

    assert {r.status_code for r in before} == {200}
    assert all("x-ratelimit-remaining" in r.headers for r in before)
    statuses = Counter(r.status_code for r in during)
    if policy == "open":
        assert statuses == {200: len(during)}  # served, uncounted, while Redis is away
    else:
        assert statuses == {503: len(during)}
        for response in during:
            body = response.json()
            assert "temporarily unavailable" in (body.get("detail") or body.get("error", ""))
            assert response.headers["retry-after"] == "1"
    # Back without a restart: counted again (a fresh Redis starts the windows anew).
    assert {r.status_code for r in after} == {200}
    assert all("x-ratelimit-remaining" in r.headers for r in after)
