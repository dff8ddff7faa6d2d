"""API key management over HTTP: create (shown once), list (prefix only), revoke."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from developer_accounts import WEBHOOKS_SCOPE, bearer, tenant
from sqlalchemy import delete

from tollway import Account, Gateway
from tollway.testing import GatewayFactory, gateway_client

KEYS = "/v1/developer/api-keys"


async def _developer(factory: GatewayFactory, **settings: object) -> Gateway:
    return await factory(plugins=["developer"], **settings)


async def test_a_created_key_is_shown_once_works_and_stops_when_revoked(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _developer(gateway_factory)
    owner = await tenant(gateway)
    async with gateway_client(gateway) as client:
        created = await client.post(
            KEYS, json={"name": "  ops  ", "scopes": [], "is_admin": True}, headers=owner.headers
        )
        body = created.json()
        listed = await client.get(KEYS, headers=owner.headers)
        used = await client.get(KEYS, headers=bearer(body["key"]))
        revoked = await client.delete(f"{KEYS}/{body['id']}", headers=owner.headers)
        after = await client.get(KEYS, headers=bearer(body["key"]))
        again = await client.delete(f"{KEYS}/{body['id']}", headers=owner.headers)
        relisted = await client.get(KEYS, headers=owner.headers)

    assert created.status_code == 201
    assert body["key"].startswith(body["prefix"])
    assert (body["name"], body["scopes"], body["is_admin"]) == ("ops", [], True)
    assert body["expires_at"] is None
    assert body["last_used_at"] is None
    entries = {entry["id"]: entry for entry in listed.json()["data"]}
    assert entries[body["id"]]["prefix"] == body["prefix"]
    assert body["key"] not in listed.text
    assert "key" not in entries[body["id"]]
    assert used.status_code == 200
    assert revoked.status_code == 204
    assert after.status_code == 401
    assert again.status_code == 404
    assert [entry["id"] for entry in relisted.json()["data"]] == [owner.key_id]


async def test_revocation_reaches_other_processes_within_the_cache_ttl(
    gateway_factory: GatewayFactory,
) -> None:
    ttl = 0.3
    gateway = await _developer(gateway_factory, key_cache_ttl=ttl)
    other_process = Gateway(gateway.settings)
    owner = await tenant(gateway)
    victim = await gateway.accounts.create_key(owner.account_id, name="victim", admin=True)
    async with gateway_client(gateway) as client, gateway_client(other_process) as other:
        assert (await other.get(KEYS, headers=bearer(victim.key))).status_code == 200
        revoked = await client.delete(f"{KEYS}/{victim.id}", headers=owner.headers)
        here = await client.get(KEYS, headers=bearer(victim.key))
        await asyncio.sleep(ttl)
        there = await other.get(KEYS, headers=bearer(victim.key))
    await other_process.database.dispose()
    assert revoked.status_code == 204
    assert here.status_code == 401
    assert there.status_code == 401


async def test_key_management_needs_an_admin_key(gateway_factory: GatewayFactory) -> None:
    gateway = await _developer(gateway_factory)
    owner = await tenant(gateway)
    plain = await tenant(gateway, "plain", admin=False)
    async with gateway_client(gateway) as client:
        responses = [
            await client.get(KEYS, headers=plain.headers),
            await client.post(KEYS, json={"name": "x", "scopes": []}, headers=plain.headers),
            await client.delete(f"{KEYS}/{owner.key_id}", headers=plain.headers),
        ]
    for response in responses:
        assert response.status_code == 403
        assert "admin" in response.json()["detail"]


async def test_another_accounts_key_is_not_found_and_keeps_working(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _developer(gateway_factory)
    mine = await tenant(gateway)
    theirs = await tenant(gateway, "globex")
    async with gateway_client(gateway) as client:
        revoke = await client.delete(f"{KEYS}/{theirs.key_id}", headers=mine.headers)
        listed = await client.get(KEYS, headers=mine.headers)
        still = await client.get(KEYS, headers=theirs.headers)
    assert revoke.status_code == 404
    assert revoke.json() == {"detail": f"API key {theirs.key_id} not found"}
    assert [entry["id"] for entry in listed.json()["data"]] == [mine.key_id]
    assert still.status_code == 200


async def test_a_key_cannot_revoke_itself(gateway_factory: GatewayFactory) -> None:
    gateway = await _developer(gateway_factory)
    owner = await tenant(gateway)
    async with gateway_client(gateway) as client:
        response = await client.delete(f"{KEYS}/{owner.key_id}", headers=owner.headers)
        still = await client.get(KEYS, headers=owner.headers)
    assert response.status_code == 409
    assert "another admin key" in response.json()["detail"]
    assert still.status_code == 200


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"name": "x", "scopes": ["nope:read", WEBHOOKS_SCOPE, "pos:write"]},
            "nope:read, pos:write",
        ),
        ({"name": "x", "scopes": []}, "needs a scope"),
        ({"name": "   ", "scopes": [WEBHOOKS_SCOPE]}, "blank"),
        ({"name": "a\x00b", "scopes": [WEBHOOKS_SCOPE]}, "NUL"),
        ({"name": "x", "scopes": [WEBHOOKS_SCOPE], "expires_in_days": 0}, "expires_in_days"),
        ({"name": "x", "scopes": [WEBHOOKS_SCOPE], "expires_in_days": "1"}, "expires_in_days"),
        ({"name": "x"}, "scopes"),
        ({"name": "x", "scopes": [WEBHOOKS_SCOPE], "admin": True}, "admin"),
    ],
    ids=[
        "unknown-scopes",
        "no-scope",
        "blank",
        "nul",
        "zero-days",
        "days-as-text",
        "no-scopes",
        "extra",
    ],
)
async def test_bad_key_requests_are_400_saying_why(
    gateway_factory: GatewayFactory, body: dict[str, object], message: str
) -> None:
    gateway = await _developer(gateway_factory)
    owner = await tenant(gateway)
    async with gateway_client(gateway) as client:
        response = await client.post(KEYS, json=body, headers=owner.headers)
        listed = await client.get(KEYS, headers=owner.headers)
    assert response.status_code == 400
    assert message in response.json()["detail"]
    assert listed.json()["total"] == 1


async def test_a_key_expires_after_its_days(
    gateway_factory: GatewayFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = await _developer(gateway_factory)
    owner = await tenant(gateway)
    async with gateway_client(gateway) as client:
        created = (
            await client.post(
                KEYS,
                json={"name": "ci", "scopes": [WEBHOOKS_SCOPE], "expires_in_days": 2},
                headers=owner.headers,
            )
        ).json()
        headers = bearer(created["key"])
        # The key is admin-less: it is admitted to a webhooks:manage route, refused here.
        now = await client.get(KEYS, headers=headers)
        later = time.time() + timedelta(days=2, seconds=1).total_seconds()
        monkeypatch.setattr("tollway.pipeline.time", SimpleNamespace(time=lambda: later))
        expired = await client.get(KEYS, headers=headers)
        owner_still = await client.get(KEYS, headers=owner.headers)
    expires_at = datetime.fromisoformat(created["expires_at"])
    assert abs(expires_at - (datetime.now(UTC) + timedelta(days=2))) < timedelta(minutes=1)
    assert now.status_code == 403
    assert expired.status_code == 401
    assert expired.json()["detail"] == "API key has expired"
    assert owner_still.status_code == 200


async def test_listing_pages_through_keys_and_checks_its_bounds(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _developer(gateway_factory)
    owner = await tenant(gateway)
    for number in range(4):
        await gateway.accounts.create_key(owner.account_id, name=f"k{number}", admin=True)
    async with gateway_client(gateway) as client:
        second = await client.get(KEYS, params={"page": 2, "limit": 2}, headers=owner.headers)
        beyond = await client.get(KEYS, params={"page": 9, "limit": 2}, headers=owner.headers)
        bad = {
            params: await client.get(KEYS, params=dict(params), headers=owner.headers)
            for params in [(("page", 0),), (("limit", 0),), (("limit", 101),), (("page", "x"),)]
        }
    assert second.json() == {
        "data": second.json()["data"],
        "total": 5,
        "page": 2,
    }
    assert [entry["name"] for entry in second.json()["data"]] == ["k1", "k2"]
    assert beyond.json() == {"data": [], "total": 5, "page": 9}
    for params, response in bad.items():
        assert response.status_code == 400, params
        assert params[0][0] in response.json()["detail"]


async def test_a_listed_key_shows_what_its_creation_showed_but_the_key(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _developer(gateway_factory)
    owner = await tenant(gateway)
    async with gateway_client(gateway) as client:
        created = (
            await client.post(
                KEYS,
                json={"name": "ci", "scopes": [WEBHOOKS_SCOPE], "expires_in_days": 2},
                headers=owner.headers,
            )
        ).json()
        listed = (await client.get(KEYS, headers=owner.headers)).json()
    del created["key"]
    assert listed["data"][1] == created
    assert created["scopes"] == [WEBHOOKS_SCOPE]


async def test_listing_the_keys_of_an_account_gone_meanwhile_says_so(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _developer(gateway_factory, key_cache_ttl=3600)
    owner = await tenant(gateway)
    async with gateway_client(gateway) as client:
        before = await client.get(KEYS, headers=owner.headers)
        async with gateway.database.transaction() as session:
            await session.execute(delete(Account).where(Account.id == owner.account_id))
        after = await client.get(KEYS, headers=owner.headers)
    assert before.status_code == 200
    assert after.status_code == 400
    assert after.json()["detail"] == f"no account with id {owner.account_id}"
