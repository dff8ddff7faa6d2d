"""The scale-out profile with real processes on loopback: three ``tollway serve``
processes on one PostgreSQL database and one Redis.

Limits are exact across processes (keyed daily quotas and the public QR API's
sliding window), and a key revoked by one process is refused by the others within
``key_cache_ttl``.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import pytest

from tollway import Gateway
from tollway.testing import Backend, GatewayFactory, GatewayProcess, deployment_settings

pytestmark = pytest.mark.slow


@pytest.fixture
async def deployment(backend: Backend, gateway_factory: GatewayFactory) -> Gateway:
    if backend.redis_url is None:
        pytest.skip("the scale-out profile is PostgreSQL and Redis")
    return await gateway_factory(plugins=["code", "qr"], isolated=True)


def _settings(gateway: Gateway) -> dict[str, Any]:
    return {
        **deployment_settings(gateway),
        "auto_migrate": "false",
        # Exactness, not latency, is under test: 300 requests landing at once on cold
        # processes can take Redis calls past the default 0.25 s, and the fail-open
        # policy would then admit uncounted requests.
        "redis_timeout": 5,
    }


@contextmanager
def _processes(gateway: Gateway, count: int, **more: Any) -> Iterator[list[GatewayProcess]]:
    with ExitStack() as stack:
        yield [
            stack.enter_context(
                GatewayProcess(plugins=["code", "qr"], **_settings(gateway), **more)
            )
            for _ in range(count)
        ]


async def _key(gateway: Gateway, plan: str = "free") -> tuple[int, str, dict[str, str]]:
    account = await gateway.accounts.create_account("acme", {"code": plan, "qr": "free"})
    created = await gateway.accounts.create_key(account, name="ci", all_scopes=True)
    return created.id, created.key, {"Authorization": f"Bearer {created.key}"}


async def test_a_daily_quota_is_exact_across_three_processes(deployment: Gateway) -> None:
    _, _, headers = await _key(deployment)  # code "free": 100 requests a day
    with _processes(deployment, 3) as gateways:
        limits = httpx.Limits(max_connections=300)
        async with httpx.AsyncClient(timeout=30, limits=limits, headers=headers) as client:
            responses = await asyncio.gather(
                *(client.get(f"{gateways[n % 3].url}/v1/code/usage") for n in range(300))
            )
    statuses = Counter(response.status_code for response in responses)
    assert statuses == {200: 100, 429: 200}, [r.text for r in responses if r.status_code == 503]
    for response in responses:
        assert response.headers["x-ratelimit-limit"] == "100"
        assert response.headers["x-request-id"]
        if response.status_code == 429:
            assert response.headers["x-ratelimit-remaining"] == "0"
            assert int(response.headers["retry-after"]) >= 1
            assert "100 requests per day" in response.json()["detail"]
    remaining = sorted(
        int(r.headers["x-ratelimit-remaining"]) for r in responses if r.status_code == 200
    )
    assert remaining == list(range(100))  # each admitted request saw its own count


async def test_the_public_qr_window_is_exact_across_three_processes(deployment: Gateway) -> None:
    with _processes(deployment, 3) as gateways:
        async with httpx.AsyncClient(timeout=30) as client:
            responses = await asyncio.gather(
                *(
                    client.get(f"{gateways[n % 3].url}/api/qr", params={"data": f"n{n}"})
                    for n in range(90)
                )
            )
    statuses = Counter(response.status_code for response in responses)
    assert statuses == {200: 30, 429: 60}  # 30 a minute per address without a key
    for response in responses:
        assert response.headers["x-ratelimit-limit"] == "30"
        if response.status_code == 429:
            assert int(response.headers["retry-after"]) >= 1


async def test_a_key_revoked_elsewhere_is_refused_everywhere_within_the_bound(
    deployment: Gateway,
) -> None:
    key_id, _, headers = await _key(deployment, plan="enterprise")
    with _processes(deployment, 3, key_cache_ttl=1) as gateways:
        async with httpx.AsyncClient(timeout=10, headers=headers) as client:
            for gateway in gateways:  # every process has the key cached
                assert (await client.get(f"{gateway.url}/v1/code/usage")).status_code == 200
            revoke = await asyncio.to_thread(
                subprocess.run,
                ["tollway", "keys", "revoke", str(key_id)],
                env=gateways[0]._env,
                capture_output=True,
                check=False,
            )
            assert revoke.returncode == 0, revoke.stderr
            revoked_at = time.monotonic()
            refused_after: list[float] = []
            for gateway in gateways:
                while (await client.get(f"{gateway.url}/v1/code/usage")).status_code != 401:
                    assert time.monotonic() - revoked_at < 10, "the key kept working"
                    await asyncio.sleep(0.05)
                refused_after.append(time.monotonic() - revoked_at)
    # key_cache_ttl = 1 s, plus a request's worth of slack on a loaded machine.
    assert max(refused_after) < 2.0, refused_after
