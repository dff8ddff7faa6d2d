"""The request path end to end: key, subscription, scope, rate limit, headers, errors."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update
from widget_plugin import GadgetsPlugin, WidgetsPlugin

from tollway import Gateway
from tollway.accounts import AccountError
from tollway.db.models import ApiKey
from tollway.testing import GatewayFactory, gateway_client


async def _widgets(factory: GatewayFactory, **settings: object) -> Gateway:
    return await factory(plugins=[], extra_plugins=[("widgets", WidgetsPlugin())], **settings)


async def _key(gateway: Gateway, plan: str = "big", **options: object) -> str:
    account = await gateway.accounts.create_account("acme", {"widgets": plan})
    options.setdefault("scopes", ["widgets:read", "widgets:write"])
    created = await gateway.accounts.create_key(account, **options)  # type: ignore[arg-type]
    return created.key


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer not-a-key"},
        {"Authorization": "Bearer tw_AAAAAAAA_" + "B" * 32},
    ],
    ids=["missing", "basic", "empty", "malformed", "unknown"],
)
async def test_requests_without_a_valid_key_are_401(
    gateway_factory: GatewayFactory, headers: dict[str, str]
) -> None:
    gateway = await _widgets(gateway_factory)
    async with gateway_client(gateway) as client:
        response = await client.get("/v1/widgets/widgets", headers=headers)
    assert response.status_code == 401
    assert response.headers["content-type"] == "application/json"
    assert response.json()["detail"]
    assert response.headers["www-authenticate"] == "Bearer"
    assert "x-ratelimit-limit" not in response.headers


async def test_valid_key_is_admitted_with_rate_limit_headers(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _widgets(gateway_factory)
    key = await _key(gateway)
    async with gateway_client(gateway) as client:
        first = await client.get("/v1/widgets/widgets", headers=bearer(key))
        second = await client.get("/v1/widgets/widgets", headers=bearer(key))
    assert first.status_code == 200
    assert first.json()["plan"] == "big"
    assert first.headers["x-ratelimit-limit"] == "1000"
    assert first.headers["x-ratelimit-remaining"] == "999"
    assert second.headers["x-ratelimit-remaining"] == "998"
    midnight = (datetime.now(UTC) + timedelta(days=1)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    assert int(first.headers["x-ratelimit-reset"]) == int(midnight.timestamp())
    assert first.headers["ratelimit-policy"] == '"daily";q=1000;w=86400'
    assert first.headers["ratelimit"].startswith('"daily";r=999;t=')
    assert "retry-after" not in first.headers


async def test_revoked_key_is_refused_at_once_on_the_revoking_process(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _widgets(gateway_factory)
    account = await gateway.accounts.create_account("acme", {"widgets": "big"})
    created = await gateway.accounts.create_key(account, scopes=["widgets:read"])
    async with gateway_client(gateway) as client:
        assert (await client.get("/v1/widgets/widgets", headers=bearer(created.key))).is_success
        assert await gateway.accounts.revoke_key(created.id)
        response = await client.get("/v1/widgets/widgets", headers=bearer(created.key))
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid API key"}


async def test_revocation_elsewhere_takes_effect_within_the_cache_ttl(
    gateway_factory: GatewayFactory,
) -> None:
    ttl = 0.3
    gateway = await _widgets(gateway_factory, key_cache_ttl=ttl)
    account = await gateway.accounts.create_account("acme", {"widgets": "big"})
    created = await gateway.accounts.create_key(account, scopes=["widgets:read"])
    async with gateway_client(gateway) as client:
        assert (await client.get("/v1/widgets/widgets", headers=bearer(created.key))).is_success
        # Revoked directly in the database, as another gateway process would.
        async with gateway.database.transaction() as session:
            await session.execute(
                update(ApiKey).where(ApiKey.id == created.id).values(revoked_at=datetime.now(UTC))
            )
        # Every cached answer came from a lookup started before the revocation and
        # lives at most ``ttl`` from that start: one request after ``ttl`` is refused.
        await asyncio.sleep(ttl)
        response = await client.get("/v1/widgets/widgets", headers=bearer(created.key))
    assert response.status_code == 401


async def test_expired_key_is_401(gateway_factory: GatewayFactory) -> None:
    gateway = await _widgets(gateway_factory)
    account = await gateway.accounts.create_account("acme", {"widgets": "big"})
    created = await gateway.accounts.create_key(
        account, scopes=["widgets:read"], expires_in=timedelta(days=1)
    )
    async with gateway.database.transaction() as session:
        await session.execute(
            update(ApiKey)
            .where(ApiKey.id == created.id)
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    async with gateway_client(gateway) as client:
        response = await client.get("/v1/widgets/widgets", headers=bearer(created.key))
    assert response.status_code == 401
    assert response.json()["detail"] == "API key has expired"


async def test_missing_scope_is_403_naming_the_scope(gateway_factory: GatewayFactory) -> None:
    gateway = await _widgets(gateway_factory)
    key = await _key(gateway, scopes=["widgets:read"])
    async with gateway_client(gateway) as client:
        response = await client.post("/v1/widgets/widgets", json={"name": "x"}, headers=bearer(key))
    assert response.status_code == 403
    assert "widgets:write" in response.json()["detail"]
    # The quota is reported but not spent on a forbidden call.
    assert response.headers["x-ratelimit-remaining"] == "1000"


async def test_no_active_subscription_is_403(gateway_factory: GatewayFactory) -> None:
    gateway = await _widgets(gateway_factory)
    account = await gateway.accounts.create_account("acme")
    key = (await gateway.accounts.create_key(account, scopes=["widgets:read"])).key
    async with gateway_client(gateway) as client:
        before = await client.get("/v1/widgets/widgets", headers=bearer(key))
        await gateway.accounts.subscribe(account, "widgets", "tiny")
        after = await client.get("/v1/widgets/widgets", headers=bearer(key))
        await gateway.accounts.unsubscribe(account, "widgets")
        cancelled = await client.get("/v1/widgets/widgets", headers=bearer(key))
    assert before.status_code == 403
    assert "subscription" in before.json()["detail"]
    assert after.status_code == 200
    assert cancelled.status_code == 403


async def test_admin_routes_need_an_admin_key(gateway_factory: GatewayFactory) -> None:
    gateway = await _widgets(gateway_factory)
    account = await gateway.accounts.create_account("acme", {"widgets": "big"})
    plain = (await gateway.accounts.create_key(account, all_scopes=True)).key
    admin = (await gateway.accounts.create_key(account, admin=True)).key
    async with gateway_client(gateway) as client:
        refused = await client.get("/v1/widgets/admin", headers=bearer(plain))
        allowed = await client.get("/v1/widgets/admin", headers=bearer(admin))
    assert refused.status_code == 403
    assert "admin" in refused.json()["detail"]
    assert allowed.status_code == 200


async def test_public_routes_need_no_key(gateway_factory: GatewayFactory) -> None:
    gateway = await _widgets(gateway_factory)
    async with gateway_client(gateway) as client:
        response = await client.get("/v1/widgets/open")
    assert response.status_code == 200
    assert response.json() == {"public": True}
    assert response.headers["x-request-id"]


async def test_limit_exhausted_is_429_with_retry_after(gateway_factory: GatewayFactory) -> None:
    gateway = await _widgets(gateway_factory)
    key = await _key(gateway, plan="tiny")
    async with gateway_client(gateway) as client:
        statuses = [
            (await client.get("/v1/widgets/widgets", headers=bearer(key))).status_code
            for _ in range(3)
        ]
        before = time.time()
        refused = await client.get("/v1/widgets/widgets", headers=bearer(key))
        after = time.time()
    assert statuses == [200, 200, 200]
    assert refused.status_code == 429
    assert refused.headers["x-ratelimit-remaining"] == "0"
    retry_after = int(refused.headers["retry-after"])
    assert 0 < retry_after <= 86_400
    # Retry-After counts from when the answer was made to the reset (whole seconds):
    # bounded by the clock read before and after the request, however slow it was.
    reset = int(refused.headers["x-ratelimit-reset"])
    assert reset - after - 1 <= retry_after <= reset - before + 1
    assert "3 requests per day" in refused.json()["detail"]


async def test_products_do_not_share_a_quota(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(
        plugins=[],
        extra_plugins=[("widgets", WidgetsPlugin()), ("gadgets", GadgetsPlugin())],
    )
    account = await gateway.accounts.create_account("acme", {"widgets": "tiny", "gadgets": "tiny"})
    key = (await gateway.accounts.create_key(account, all_scopes=True)).key
    async with gateway_client(gateway) as client:
        for _ in range(3):
            await client.get("/v1/widgets/widgets", headers=bearer(key))
        widgets = await client.get("/v1/widgets/widgets", headers=bearer(key))
        gadgets = await client.get("/v1/gadgets/widgets", headers=bearer(key))
    assert widgets.status_code == 429
    assert gadgets.status_code == 200
    assert gadgets.headers["x-ratelimit-remaining"] == "2"


async def test_plan_limits_come_from_the_config_file(
    gateway_factory: GatewayFactory, tmp_path: object
) -> None:
    gateway = await _widgets(
        gateway_factory, products={"widgets": {"plans": {"tiny": {"requests_per_day": 1}}}}
    )
    key = await _key(gateway, plan="tiny")
    async with gateway_client(gateway) as client:
        first = await client.get("/v1/widgets/widgets", headers=bearer(key))
        second = await client.get("/v1/widgets/widgets", headers=bearer(key))
    assert first.headers["x-ratelimit-limit"] == "1"
    assert second.status_code == 429


async def test_every_response_has_a_request_id(gateway_factory: GatewayFactory) -> None:
    gateway = await _widgets(gateway_factory)
    async with gateway_client(gateway) as client:
        responses = [
            await client.get("/v1/widgets/open"),
            await client.get("/v1/widgets/widgets"),
            await client.get("/v1/widgets/nowhere"),
            await client.get("/elsewhere"),
            await client.get("/v1/widgets/open", headers={"X-Request-ID": "lb-1234567890"}),
        ]
    ids = [response.headers["x-request-id"] for response in responses]
    assert all(ids)
    assert len(set(ids)) == len(ids)
    assert ids[-1] == "lb-1234567890"
    assert responses[2].status_code == 404
    assert responses[2].json()["detail"]


async def test_server_errors_carry_the_request_id(gateway_factory: GatewayFactory) -> None:
    gateway = await _widgets(gateway_factory)
    key = await _key(gateway)
    async with gateway_client(gateway) as client:
        response = await client.get("/v1/widgets/boom", headers=bearer(key))
    assert response.status_code == 500
    body = response.json()
    assert body == {
        "detail": "Internal server error",
        "request_id": response.headers["x-request-id"],
    }
    assert "kaboom" not in response.text


async def test_invalid_body_is_400_in_the_product_style(gateway_factory: GatewayFactory) -> None:
    gateway = await _widgets(gateway_factory)
    key = await _key(gateway)
    async with gateway_client(gateway) as client:
        wrong_type = await client.post(
            "/v1/widgets/widgets", json={"name": "x", "size": "big"}, headers=bearer(key)
        )
        lenient = await client.post(
            "/v1/widgets/widgets", json={"name": "x", "size": "5"}, headers=bearer(key)
        )
        whole = await client.post(
            "/v1/widgets/widgets", json={"name": "x", "size": 5.0}, headers=bearer(key)
        )
        fraction = await client.post(
            "/v1/widgets/widgets", json={"name": "x", "size": 5.5}, headers=bearer(key)
        )
        not_json = await client.post(
            "/v1/widgets/widgets",
            content=b"{oops",
            headers={**bearer(key), "Content-Type": "application/json"},
        )
        no_key = await client.post("/v1/widgets/widgets", content=b"{oops")
    assert wrong_type.status_code == 400
    assert "size" in wrong_type.json()["detail"]
    # Bodies are decoded strictly: a numeric string is not a number.
    assert lenient.status_code == 400
    # ... but a whole-number float is an integer, as in JSON Schema; a fraction is not.
    assert whole.status_code == 201
    assert whole.json() == {"name": "x", "size": 5}
    assert fraction.status_code == 400
    assert "$.size" in lenient.json()["detail"]
    assert not_json.status_code == 400
    assert not_json.headers["content-type"] == "application/json"
    # Authentication comes before the body is even read.
    assert no_key.status_code == 401


async def test_keys_with_unknown_scopes_are_refused(gateway_factory: GatewayFactory) -> None:
    gateway = await _widgets(gateway_factory)
    account = await gateway.accounts.create_account("acme")
    with pytest.raises(AccountError, match="widgets:delete"):
        await gateway.accounts.create_key(account, scopes=["widgets:read", "widgets:delete"])


async def test_key_listing_shows_the_prefix_and_stores_only_a_hash(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _widgets(gateway_factory)
    account = await gateway.accounts.create_account("acme")
    created = await gateway.accounts.create_key(account, name="ci", scopes=["widgets:read"])
    [listed] = await gateway.accounts.list_keys(account)
    assert listed.prefix == created.key[:11] == created.prefix
    assert created.key not in repr(listed)
    async with gateway.database.sessions() as session:
        stored = await session.get(ApiKey, created.id)
    assert stored is not None
    assert created.key not in (stored.key_hash, stored.prefix)
    assert len(stored.key_hash) == 64


async def test_errors_follow_the_products_error_style(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(
        plugins=[], extra_plugins=[("widgets", WidgetsPlugin(error_style="error"))]
    )
    key = await _key(gateway)
    async with gateway_client(gateway) as client:
        unauthorized = await client.get("/v1/widgets/widgets")
        not_found = await client.get("/v1/widgets/nowhere")
        invalid = await client.post("/v1/widgets/widgets", json={"size": 2}, headers=bearer(key))
        crashed = await client.get("/v1/widgets/boom", headers=bearer(key))
    assert unauthorized.json() == {
        "error": "Missing API key: send 'Authorization: Bearer <API key>'"
    }
    assert set(not_found.json()) == {"error"}
    assert invalid.status_code == 400
    assert "name" in invalid.json()["error"]
    assert crashed.json() == {
        "error": "Internal server error",
        "request_id": crashed.headers["x-request-id"],
    }
