"""What callers get while the Redis behind the rate limiter is down, and after."""

from __future__ import annotations

import pytest
from widget_plugin import WidgetsPlugin

from tollway.testing import GatewayFactory, RedisServer, gateway_client


@pytest.mark.parametrize("policy", ["open", "closed"])
async def test_the_failure_policy_holds_and_service_recovers_without_restart(
    gateway_factory: GatewayFactory, own_redis: RedisServer, policy: str
) -> None:
    gateway = await gateway_factory(
        plugins=[],
        extra_plugins=[("widgets", WidgetsPlugin())],
        redis_url=own_redis.url,
        rate_limit_failure=policy,
    )
    account = await gateway.accounts.create_account("acme", {"widgets": "big"})
    key = (await gateway.accounts.create_key(account, scopes=["widgets:read"])).key
    headers = {"Authorization": f"Bearer {key}"}
    async with gateway_client(gateway) as client:
        before = await client.get("/v1/widgets/widgets", headers=headers)
        own_redis.stop()
        during = await client.get("/v1/widgets/widgets", headers=headers)
        own_redis.start()
        after = await client.get("/v1/widgets/widgets", headers=headers)

    assert before.status_code == 200
    assert before.headers["x-ratelimit-remaining"] == "999"
    if policy == "open":
        assert during.status_code == 200
        assert "x-ratelimit-remaining" not in during.headers
    else:
        assert during.status_code == 503
        assert during.headers["retry-after"] == "1"
        body = during.json()
        assert "temporarily unavailable" in body["detail"]
        assert body["request_id"] == during.headers["x-request-id"]
    # A fresh Redis has no counters: the window starts again, and nothing was restarted.
    assert after.status_code == 200
    assert after.headers["x-ratelimit-remaining"] == "999"
