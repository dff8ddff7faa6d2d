"""Refusals of a subscribed caller (admin-only route, missing scope) report its window
without spending it, never with ``Retry-After``, and stand while the limiter is down."""

from __future__ import annotations

import pytest
from widget_plugin import WidgetsPlugin

from tollway import Gateway
from tollway.testing import GatewayFactory, RedisServer, gateway_client

RATE_LIMIT_HEADERS = {
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "ratelimit",
    "ratelimit-policy",
}


async def _widgets(factory: GatewayFactory, **settings: object) -> Gateway:
    return await factory(plugins=[], extra_plugins=[("widgets", WidgetsPlugin())], **settings)


async def _bearer(gateway: Gateway, account: int, **options: object) -> dict[str, str]:
    created = await gateway.accounts.create_key(account, **options)  # type: ignore[arg-type]
    return {"Authorization": f"Bearer {created.key}"}


async def test_admin_route_refusal_reports_the_window_without_spending_it(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _widgets(gateway_factory)
    account = await gateway.accounts.create_account("acme", {"widgets": "big"})
    plain = await _bearer(gateway, account, scopes=["widgets:read"])
    async with gateway_client(gateway) as client:
        admitted = await client.get("/v1/widgets/widgets", headers=plain)
        refused = await client.get("/v1/widgets/admin", headers=plain)
    assert refused.status_code == 403
    assert "admin" in refused.json()["detail"]
    assert set(refused.headers) >= RATE_LIMIT_HEADERS
    assert admitted.headers["x-ratelimit-remaining"] == "999"
    assert refused.headers["x-ratelimit-remaining"] == "999"
    assert refused.headers["x-ratelimit-limit"] == "1000"
    assert "retry-after" not in refused.headers


@pytest.mark.parametrize(
    ("path", "key_options"),
    [
        ("/v1/widgets/admin", {"scopes": ["widgets:read"]}),
        ("/v1/widgets/widgets", {"scopes": ["widgets:write"]}),
    ],
    ids=["admin", "scope"],
)
async def test_refusals_after_the_quota_is_spent_carry_no_retry_after(
    gateway_factory: GatewayFactory, path: str, key_options: dict[str, object]
) -> None:
    gateway = await _widgets(gateway_factory)
    account = await gateway.accounts.create_account("acme", {"widgets": "tiny"})
    spender = await _bearer(gateway, account, scopes=["widgets:read"])
    refused_key = await _bearer(gateway, account, **key_options)
    async with gateway_client(gateway) as client:
        for _ in range(3):
            assert (await client.get("/v1/widgets/widgets", headers=spender)).status_code == 200
        over = await client.get("/v1/widgets/widgets", headers=spender)
        refused = await client.get(path, headers=refused_key)
    assert over.status_code == 429
    assert int(over.headers["retry-after"]) > 0
    assert refused.status_code == 403
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert refused.headers["x-ratelimit-reset"] == over.headers["x-ratelimit-reset"]
    assert "retry-after" not in refused.headers


async def test_refusals_stand_while_the_limiter_is_down(
    gateway_factory: GatewayFactory, own_redis: RedisServer
) -> None:
    """Even under ``rate_limit_failure = "closed"``: the limiter decides admissions,
    and a refused request was never going to be admitted."""
    gateway = await _widgets(gateway_factory, redis_url=own_redis.url, rate_limit_failure="closed")
    account = await gateway.accounts.create_account("acme", {"widgets": "big"})
    reader = await _bearer(gateway, account, scopes=["widgets:read"])
    async with gateway_client(gateway) as client:
        own_redis.stop()
        try:
            admin = await client.get("/v1/widgets/admin", headers=reader)
            scope = await client.post("/v1/widgets/widgets", json={"name": "x"}, headers=reader)
            admitted = await client.get("/v1/widgets/widgets", headers=reader)
        finally:
            own_redis.start()
    assert (admin.status_code, scope.status_code) == (403, 403)
    assert "admin" in admin.json()["detail"]
    assert "widgets:write" in scope.json()["detail"]
    for refused in (admin, scope):
        assert not RATE_LIMIT_HEADERS & set(refused.headers)
    assert admitted.status_code == 503
