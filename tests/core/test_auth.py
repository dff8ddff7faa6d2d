"""The default key authenticator: cache, shared lookups, refresh-ahead, last use."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, update
from widget_plugin import WidgetsPlugin

from tollway import Gateway
from tollway.auth import DatabaseKeyAuthenticator, Principal
from tollway.db import utcnow
from tollway.db.models import ApiKey
from tollway.testing import GatewayFactory


@contextmanager
def key_lookups(gateway: Gateway) -> Iterator[list[str]]:
    """Every SELECT on api_keys the engine runs while inside."""
    seen: list[str] = []

    def record(*args: Any) -> None:
        statement = str(args[2])
        if statement.lstrip().upper().startswith("SELECT") and "api_keys" in statement:
            seen.append(statement)

    engine = gateway.database.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


async def _setup(factory: GatewayFactory) -> tuple[Gateway, int, str]:
    gateway = await factory(plugins=[], extra_plugins=[("widgets", WidgetsPlugin())])
    account = await gateway.accounts.create_account("acme", {"widgets": "big"})
    created = await gateway.accounts.create_key(account, scopes=["widgets:read"])
    return gateway, created.id, created.key


async def test_concurrent_misses_share_one_lookup(gateway_factory: GatewayFactory) -> None:
    gateway, _, key = await _setup(gateway_factory)
    authenticator = DatabaseKeyAuthenticator(gateway.database, ttl=60)
    with key_lookups(gateway) as lookups:
        principals = await asyncio.gather(*(authenticator.authenticate(key) for _ in range(50)))
        await authenticator.authenticate(key)
    assert len(lookups) == 1
    assert {principal.plans["widgets"] for principal in principals if principal} == {"big"}
    assert all(principals)


async def test_unknown_keys_are_cached_too(gateway_factory: GatewayFactory) -> None:
    gateway, _, key = await _setup(gateway_factory)
    authenticator = DatabaseKeyAuthenticator(gateway.database, ttl=60)
    unknown = key[:-1] + ("A" if key[-1] != "A" else "B")
    with key_lookups(gateway) as lookups:
        assert await authenticator.authenticate(unknown) is None
        assert await authenticator.authenticate(unknown) is None
        assert await authenticator.authenticate("tw_not_even_well_formed") is None
    assert len(lookups) == 1


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class PausedAuthenticator(DatabaseKeyAuthenticator):
    """Holds each finished database lookup until released, to order a race exactly,
    and says when a lookup has been stored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.looked_up = asyncio.Event()
        self.release = asyncio.Event()
        self.release.set()
        self.stored = asyncio.Event()

    def hold(self) -> None:
        self.looked_up.clear()
        self.release.clear()
        self.stored.clear()

    async def _load(self, digest: str) -> Principal | None:
        principal = await super()._load(digest)
        self.looked_up.set()
        await self.release.wait()
        return principal

    async def _load_and_store(self, key: str, generation: int) -> Principal | None:
        principal = await super()._load_and_store(key, generation)
        self.stored.set()
        return principal


async def _revoke_elsewhere(gateway: Gateway, key_id: int) -> None:
    """Revoked straight in the database, as another gateway process would: this
    process's authenticator is not told."""
    async with gateway.database.transaction() as session:
        await session.execute(update(ApiKey).where(ApiKey.id == key_id).values(revoked_at=utcnow()))


async def test_busy_keys_are_refreshed_in_the_background(gateway_factory: GatewayFactory) -> None:
    gateway, key_id, key = await _setup(gateway_factory)
    clock = Clock()
    authenticator = PausedAuthenticator(gateway.database, ttl=0.4, clock=clock)
    assert await authenticator.authenticate(key) is not None
    async with gateway.database.transaction() as session:
        await session.execute(
            update(ApiKey).where(ApiKey.id == key_id).values(scopes=["widgets:write"])
        )
    clock.now += 0.32  # past three quarters of the TTL, before expiry
    authenticator.hold()
    with key_lookups(gateway) as lookups:
        served_from_cache = await authenticator.authenticate(key)
        assert not authenticator.stored.is_set()  # this request did not wait for it
        authenticator.release.set()
        await authenticator.stored.wait()
    assert len(lookups) == 1
    assert served_from_cache is not None
    assert served_from_cache.scopes == {"widgets:read"}
    refreshed = await authenticator.authenticate(key)
    assert refreshed is not None
    assert refreshed.scopes == {"widgets:write"}


async def test_a_slow_lookup_does_not_stretch_the_revocation_bound(
    gateway_factory: GatewayFactory,
) -> None:
    """A lookup that read the key just before another process revoked it, and only
    finished a whole TTL later, must not keep the key working beyond that TTL."""
    gateway, key_id, key = await _setup(gateway_factory)
    clock = Clock()
    authenticator = PausedAuthenticator(gateway.database, ttl=1.0, clock=clock)
    authenticator.hold()
    slow = asyncio.create_task(authenticator.authenticate(key))
    await authenticator.looked_up.wait()  # it has read the key as still valid
    await _revoke_elsewhere(gateway, key_id)
    clock.now += 1.0  # the TTL has passed since the revocation
    authenticator.release.set()
    assert await slow is not None  # that request was already in flight
    assert await authenticator.authenticate(key) is None


async def test_revocation_elsewhere_is_seen_once_the_ttl_has_passed(
    gateway_factory: GatewayFactory,
) -> None:
    gateway, key_id, key = await _setup(gateway_factory)
    clock = Clock()
    authenticator = DatabaseKeyAuthenticator(gateway.database, ttl=1.0, clock=clock)
    assert await authenticator.authenticate(key) is not None
    await _revoke_elsewhere(gateway, key_id)
    clock.now += 0.5
    assert await authenticator.authenticate(key) is not None  # cached, as documented
    clock.now += 0.5
    assert await authenticator.authenticate(key) is None


async def test_a_lookup_racing_forget_is_not_cached(gateway_factory: GatewayFactory) -> None:
    gateway, key_id, key = await _setup(gateway_factory)
    authenticator = PausedAuthenticator(gateway.database, ttl=60)
    authenticator.hold()
    racing = asyncio.create_task(authenticator.authenticate(key))
    await authenticator.looked_up.wait()  # it has read the key as still valid
    await gateway.accounts.revoke_key(key_id)
    authenticator.forget(key_id)
    authenticator.release.set()
    assert await racing is not None  # that one request was already in flight
    assert await authenticator.authenticate(key) is None


async def test_last_use_is_recorded_once_a_minute(gateway_factory: GatewayFactory) -> None:
    gateway, _, key = await _setup(gateway_factory)
    authenticator = DatabaseKeyAuthenticator(gateway.database, ttl=0)
    [before] = await gateway.accounts.list_keys(1)
    await authenticator.authenticate(key)
    [first] = await gateway.accounts.list_keys(1)
    await authenticator.authenticate(key)
    [second] = await gateway.accounts.list_keys(1)
    assert before.last_used_at is None
    assert first.last_used_at is not None
    assert second.last_used_at == first.last_used_at
