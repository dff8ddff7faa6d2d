"""API key authentication: the key authenticator hook and its database default."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from sqlalchemy import select, update

from tollway.billing.platform import ADMITTED_PLANS
from tollway.db import Database, utcnow
from tollway.db.models import ApiKey
from tollway.keys import hash_key, is_well_formed

log = logging.getLogger("tollway.auth")


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: an API key of an account, with what it may do."""

    key_id: int
    account_id: int
    name: str
    prefix: str
    scopes: frozenset[str]
    is_admin: bool
    expires_at: float | None
    """Epoch seconds after which the key is refused, or ``None``."""
    plans: Mapping[str, str]
    """Product name -> plan name of the subscriptions the account is admitted by
    (:data:`tollway.billing.platform.ADMITTED`)."""

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at


class KeyAuthenticator(Protocol):
    """Finds the principal of an API key.

    One that caches may also offer ``cached(key) -> Principal | None``: the principal
    while its cached answer is fresh, else ``None``, as a plain call. The request path
    tries it first when it is there, and awaits :meth:`authenticate` on ``None``. With
    ``cached`` it may offer ``lease(key)``, ``clock`` and ``generation`` too (see
    :meth:`DatabaseKeyAuthenticator.lease`): then a route's busy keys skip even that
    call (:mod:`tollway.admission.express`).
    """

    async def authenticate(self, key: str) -> Principal | None:
        """The principal for a presented key, or ``None`` if unknown or revoked.

        Expiry is checked by the caller on every request, so a cached principal
        still stops working the second its key expires.
        """
        ...

    def forget(self, key_id: int | None = None) -> None:
        """Drop cached principals (one key's, or all) after a change to keys or plans."""
        ...


class DatabaseKeyAuthenticator:
    """Looks keys up by hash, caching answers (also "unknown") for ``ttl`` seconds.

    The TTL bounds how long a key revoked by another gateway process keeps working:
    an answer is kept for ``ttl`` from the moment its lookup *started*, so a lookup
    that read the key just before it was revoked, and took a while to finish, cannot
    stretch that bound. The process that revokes a key forgets it at once. Busy keys
    never wait on the database: a key's entry is refreshed in the background during
    the last quarter of its life, and concurrent misses for one key share a single
    lookup. ``clock`` (monotonic seconds) is replaceable for tests.
    """

    LAST_USED_PRECISION = timedelta(minutes=1)
    """``last_used_at`` is written at most this often per key, not on every request."""

    def __init__(
        self,
        database: Database,
        ttl: float = 1.0,
        max_entries: int = 100_000,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._database = database
        self.clock = clock
        """Monotonic seconds, as the cache reads them (replaceable for tests)."""
        self._ttl = ttl
        self._refresh_from = ttl * 0.75
        self._max_entries = max_entries
        # key -> (expires, refresh from, principal): monotonic seconds, set when stored
        self._cache: dict[str, tuple[float, float, Principal | None]] = {}
        self._loading: dict[str, asyncio.Task[Principal | None]] = {}
        self.generation = 0
        """Counts :meth:`forget` calls: a :meth:`lease` holds while it is unchanged."""

    def cached(self, key: str) -> Principal | None:
        """The principal of ``key`` while its answer is cached and fresh, else ``None``
        (then :meth:`authenticate` decides): the request path's way in, with no
        coroutine to make for the common case."""
        entry = self._fresh(key)
        return entry[2] if entry is not None else None

    def lease(self, key: str) -> tuple[Principal, float] | None:
        """The principal of ``key`` while its answer is cached and fresh, with the time
        (on :attr:`clock`) its refresh falls due: until then, and while
        :attr:`generation` is unchanged, :meth:`cached` answers the same. The express
        lanes of :mod:`tollway.admission.express` check that instead of asking."""
        entry = self._fresh(key)
        if entry is None or entry[2] is None:
            return None
        return entry[2], entry[1]

    async def authenticate(self, key: str) -> Principal | None:
        # Cached by the presented key itself: a hit costs one dict lookup, no hashing.
        entry = self._fresh(key)
        if entry is not None:
            return entry[2]
        if not is_well_formed(key):
            return None
        task = self._loading.get(key) or self._start_load(key)
        return await asyncio.shield(task)

    def _fresh(self, key: str) -> tuple[float, float, Principal | None] | None:
        """``key``'s cache entry while fresh (its refresh started once due), else
        ``None``."""
        entry = self._cache.get(key)
        if entry is None:
            return None
        now = self.clock()
        if now >= entry[0]:
            return None
        if now >= entry[1] and key not in self._loading:
            self._start_load(key)
        return entry

    def forget(self, key_id: int | None = None) -> None:
        # Lookups already running may have read the old state: they must not cache it.
        self.generation += 1
        if key_id is None:
            self._cache.clear()
            return
        self._cache = {
            key: entry
            for key, entry in self._cache.items()
            if entry[2] is None or entry[2].key_id != key_id
        }

    def _start_load(self, key: str) -> asyncio.Task[Principal | None]:
        task = asyncio.create_task(self._load_and_store(key, self.generation))
        self._loading[key] = task
        task.add_done_callback(lambda done: self._loaded(key, done))
        return task

    def _loaded(self, key: str, task: asyncio.Task[Principal | None]) -> None:
        self._loading.pop(key, None)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.warning("API key lookup failed: %s", error)

    async def _load_and_store(self, key: str, generation: int) -> Principal | None:
        started = self.clock()
        principal = await self._load(hash_key(key))
        if generation == self.generation:
            if len(self._cache) >= self._max_entries:
                now = self.clock()
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                if len(self._cache) >= self._max_entries:
                    self._cache.clear()
            self._cache[key] = (started + self._ttl, started + self._refresh_from, principal)
        return principal

    async def _load(self, digest: str) -> Principal | None:
        async with self._database.sessions() as session:
            key = await session.scalar(
                select(ApiKey).where(ApiKey.key_hash == digest, ApiKey.revoked_at.is_(None))
            )
            if key is None:
                return None
            rows = await session.execute(ADMITTED_PLANS, {"account_id": key.account_id})
            plans: dict[str, str] = {row.line: row.plan for row in rows}
            now = utcnow()
            if key.last_used_at is None or now - key.last_used_at >= self.LAST_USED_PRECISION:
                await session.execute(
                    update(ApiKey).where(ApiKey.id == key.id).values(last_used_at=now)
                )
                await session.commit()
        return Principal(
            key_id=key.id,
            account_id=key.account_id,
            name=key.name,
            prefix=key.prefix,
            scopes=frozenset(key.scopes),
            is_admin=key.is_admin,
            expires_at=key.expires_at.timestamp() if key.expires_at else None,
            plans=plans,
        )
