"""What each code redirects to, kept in this process so a redirect reads no database.

A code is read (through :class:`tollway.Reads`) the first time it is followed, then
answered from memory for ``redirect_cache_ttl`` seconds; so is a code that names no
link, so that requests for made-up codes cannot make every redirect a read. After the
TTL a link's entry still answers, for one TTL more at most, while a background task
reads every such code again, a few hundred per statement: a busy process reads its
codes once a TTL in a handful of statements instead of once per code on the request
path (at 1,000 codes and a TTL of 1 s, 1,000 reads a second on a thread, an eighth of
a redirect's cost). A change made through this process forgets the code as soon as it
commits (:meth:`Targets.forget`); one made through another process is seen here within
the TTL and that one read. Both maps are bounded: beyond their size, the entry read
longest ago goes. With a TTL of 0 every redirect reads its code.

``max_clicks`` is enforced against the stored count read with the link plus this
process's ``GET`` redirects since (bots among them too, until the link is read again:
telling them apart is the click writer's work, off the request path). Clicks are
stored in batches, so across processes (and for the clicks a batch had not yet stored
when the link was read again) a link may exceed it by the redirects served in about
``redirect_cache_ttl`` + ``click_flush_interval`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import bindparam, select

from tollway import Gateway
from tollway_link.models import Link
from tollway_link.settings import LinkSettings

log = logging.getLogger("tollway.link.targets")

GATHER_SECONDS = 0.25
"""The most a background refresh waits for more stale codes before reading them (a
quarter of ``redirect_cache_ttl`` when that is shorter)."""
REFRESH_BATCH = 500
"""Codes read again per statement."""
KNOWN_ENTRIES = 50_000
"""Links remembered per process (a few hundred bytes each)."""
UNKNOWN_ENTRIES = 10_000
"""Codes remembered as naming no link: bounded apart, so a scan of made-up codes
cannot push the links out."""

TARGET = select(
    Link.id,
    Link.account_id,
    Link.destination_url,
    Link.expires_at,
    Link.expired_url,
    Link.max_clicks,
    Link.clicks,
).where(Link.code == bindparam("code"))
REFRESHED = select(Link.code, *TARGET.selected_columns).where(
    Link.code.in_(bindparam("codes", expanding=True))
)


class Target(msgspec.Struct, gc=False):
    """A link as its redirects need it."""

    link_id: int
    account_id: int
    destination: str
    expires_at: float | None
    """Epoch seconds."""
    expired_url: str | None
    max_clicks: int | None
    clicks: int
    """The stored count when read, plus this process's redirects since."""
    fresh_until: float = 0.0
    """``time.monotonic()`` until which the entry may answer."""

    def used_up(self, now: float) -> bool:
        """Expired at ``now`` (epoch seconds), or out of clicks."""
        return (self.expires_at is not None and now >= self.expires_at) or (
            self.max_clicks is not None and self.clicks >= self.max_clicks
        )


def _target(
    link_id: int,
    account_id: int,
    destination: str,
    expires_at: datetime | None,
    expired_url: str | None,
    max_clicks: int | None,
    clicks: int,
) -> Target:
    expiry = None if expires_at is None else expires_at.timestamp()
    return Target(link_id, account_id, destination, expiry, expired_url, max_clicks, clicks)


def _coded_target(code: str, *columns: Any) -> tuple[str, Target]:
    """A row of :data:`REFRESHED`: the code, then :data:`TARGET`'s columns."""
    return code, _target(*columns)


class Targets:
    """The process's code -> :class:`Target` cache (a service: one per gateway)."""

    def __init__(self, gateway: Gateway) -> None:
        self.reads = gateway.database.reads
        self.ttl = gateway.product_settings(LinkSettings).redirect_cache_ttl
        self.known: dict[str, Target] = {}
        self.unknown: dict[str, float] = {}
        """Code -> ``time.monotonic()`` until which it is known to name no link."""
        self.generation = 0
        """Moves on every :meth:`forget`: a read begun before one is not kept."""
        self.stale: set[str] = set()
        """Codes past their TTL, still answering, waiting to be read again."""
        self.refreshing: asyncio.Task[None] | None = None

    async def find(self, code: str) -> Target | None:
        """The link ``code`` names, ``None`` when there is none."""
        now = time.monotonic()
        target = self.known.get(code)
        if target is not None:
            if target.fresh_until > now:
                return target
            if target.fresh_until + self.ttl > now:
                self._refresh_soon(code)
                return target
        if self.unknown.get(code, 0.0) > now:
            return None
        generation = self.generation
        target = await self.reads.first(TARGET, _target, code=code)
        if generation == self.generation:
            self._keep(code, target, time.monotonic() + self.ttl)
        return target

    def _refresh_soon(self, code: str) -> None:
        self.stale.add(code)
        if self.refreshing is None:
            self.refreshing = asyncio.get_running_loop().create_task(self._refresh())

    async def _refresh(self) -> None:
        """Read the stale codes again, a batch per statement, until none is left. A
        batch that fails, or that a :meth:`forget` overtook, is dropped: its entries
        answer until their grace runs out, then their next redirect reads them."""
        try:
            # Codes go stale one at a time, as their TTLs run out: gather them for a
            # moment (each still answers for a whole TTL) so that one statement reads
            # many, rather than one statement a redirect for each code found stale.
            await asyncio.sleep(min(self.ttl / 4, GATHER_SECONDS))
            while self.stale:
                codes = [self.stale.pop() for _ in range(min(REFRESH_BATCH, len(self.stale)))]
                generation = self.generation
                found = dict(await self.reads.all(REFRESHED, _coded_target, codes=codes))
                if generation == self.generation:
                    until = time.monotonic() + self.ttl
                    for code in codes:
                        self._keep(code, found.get(code), until)
        except Exception:
            log.warning("reading short codes again failed", exc_info=True)
            self.stale.clear()
        finally:
            self.refreshing = None

    async def stop(self) -> None:
        if self.refreshing is not None:
            self.refreshing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.refreshing

    def _keep(self, code: str, target: Target | None, until: float) -> None:
        # Taken out first so that, put back, it is the newest; the oldest goes when full.
        self.known.pop(code, None)
        self.unknown.pop(code, None)
        if target is None:
            if len(self.unknown) >= UNKNOWN_ENTRIES:
                del self.unknown[next(iter(self.unknown))]
            self.unknown[code] = until
        else:
            if len(self.known) >= KNOWN_ENTRIES:
                del self.known[next(iter(self.known))]
            target.fresh_until = until
            self.known[code] = target

    def forget(self, code: str) -> None:
        """Read ``code`` again on its next redirect (its link changed or went)."""
        self.generation += 1
        self.known.pop(code, None)
        self.unknown.pop(code, None)
