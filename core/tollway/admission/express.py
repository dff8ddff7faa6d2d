"""Express lanes: a route's busy bearer keys admitted in plain calls.

The whole admission (:mod:`tollway.pipeline`) finds a request's key, its principal,
plan, scope and window, and counts it. For the next request with the same
``Authorization`` header on the same route, none of that changes until the
authenticator's answer falls due for a refresh (or it forgets keys), the principal
expires or the window ends. So once a bearer key is admitted, the route keeps a
:class:`Lane` for the raw header: the principal and plan it found, how long the
authenticator's answer holds (its :meth:`~tollway.auth.DatabaseKeyAuthenticator.lease`)
and the limiter's live count of the window (:class:`~tollway.ratelimit.Tally`). The
next request checks that all of it still holds and counts, or goes the whole way.

Only where the whole way would give the same answer: a bearer key, no product check
before the key, no customer to verify, an authenticator that leases its answers and a
limiter that keeps tallies (the in-memory one). A refusal, a denial and every first
request take the whole way.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

import msgspec
from litestar.di import NamedDependency

from tollway.auth import Principal
from tollway.ratelimit import Decision, Quota, Tally
from tollway.registry import Plan, Product
from tollway.state import RequestState

ADMITTED_ENTRIES = 4096
"""Principals (and lanes) remembered per route; more and the route starts over."""


class Caller(msgspec.Struct, frozen=True, gc=False):
    """An admitted request's identity, plan and rate limit state, for handlers."""

    principal: Principal
    product: Product
    plan: Plan
    decision: Decision | None
    """``None`` when the limiter was unreachable and the policy let the request in."""


CurrentCaller = NamedDependency[Caller]
"""Annotate a handler parameter named ``caller`` with this to receive the caller."""


@runtime_checkable
class LeasingAuthenticator(Protocol):
    """An authenticator whose cached answers a lane can hold: see
    :meth:`tollway.auth.DatabaseKeyAuthenticator.lease`."""

    generation: int

    def clock(self) -> float: ...

    def lease(self, key: str) -> tuple[Principal, float] | None: ...


@runtime_checkable
class TallyingLimiter(Protocol):
    """A rate limiter whose fixed windows a lane can count on: see
    :meth:`tollway.ratelimit.MemoryRateLimiter.tally`."""

    def clock(self) -> float: ...

    def tally(self, key: str, quota: Quota) -> Tally | None: ...


class Lane:
    """What one ``Authorization`` header's requests on one route count against, while
    nothing about it changes: see :meth:`ExpressLanes.admit`."""

    __slots__ = (
        "fresh_until",
        "generation",
        "index",
        "limit",
        "named",
        "parts",
        "plan",
        "principal",
        "product",
        "quota",
        "reset",
        "reset_at",
        "second",
        "start",
        "tail",
        "tally",
    )

    def __init__(
        self,
        product: Product,
        principal: Principal,
        plan: Plan,
        quota: Quota,
        tally: Tally,
        fresh_until: float,
        generation: int,
    ) -> None:
        self.product = product
        self.principal = principal
        self.plan = plan
        self.quota = quota
        self.tally = tally
        self.fresh_until = fresh_until
        """When the authenticator's answer falls due, on its clock."""
        self.generation = generation
        """The authenticator's generation when leased."""
        self.limit = quota.limit
        self.index = tally.index
        self.start = tally.index * quota.window
        self.reset_at = self.start + quota.window
        """The window is [start, reset_at) on the limiter's clock, in epoch seconds."""
        # The headers Decision.headers() makes, in parts: what is fixed for the window
        # is built here, the `t=` tail once a second, the count per request.
        self.parts = quota.header_parts
        self.reset = (b"x-ratelimit-reset", b"%d" % self.reset_at)
        self.named = self.parts[2] + b";r="
        self.second = -1
        self.tail = b""

    def caller(self, used: int, now: float) -> Caller:
        """The :class:`Caller` of the request counted ``used`` at ``now``, with the
        :class:`Decision` the limiter's ``hit`` would have made."""
        quota = self.quota
        decision = Decision(
            True,
            self.limit,
            self.limit - used,
            self.reset_at,
            0,
            quota.policy,
            quota.window,
            self.parts,
            now,
        )
        return Caller(self.principal, self.product, self.plan, decision)


class ExpressLanes:
    """A route's lanes, one per busy bearer key's raw ``Authorization`` header."""

    __slots__ = ("keys", "lanes", "limiter", "product")

    def __init__(
        self, product: Product, keys: LeasingAuthenticator, limiter: TallyingLimiter
    ) -> None:
        self.product = product
        self.keys = keys
        self.limiter = limiter
        self.lanes: dict[bytes | None, Lane] = {}

    def admit(self, state: RequestState) -> bool:
        """Admit the request as the whole admission would, when its header has a lane
        that still holds: the authenticator's answer not due and nothing forgotten
        since (so the same principal, plan and scopes), the principal unexpired, the
        window the lane counts in still the limiter's, room left in it. Then count it
        on the tally, leave the rate limit headers and the makings of the caller in
        ``state`` and return ``True``; else ``False``, and the whole admission
        decides (and opens a new lane when it can).

        This is all a busy key's request costs: a dict lookup, two clock reads and a
        count."""
        lane = self.lanes.get(state.authorization)
        if lane is None:
            return False
        keys = self.keys
        if keys.clock() >= lane.fresh_until or keys.generation != lane.generation:
            return False
        principal = lane.principal
        if principal.expires_at is not None and principal.expired(time.time()):
            return False
        now = self.limiter.clock()
        tally = lane.tally
        used = tally.used
        if not lane.start <= now < lane.reset_at or tally.index != lane.index:
            return False
        if used >= lane.limit:
            return False  # the whole way makes the 429
        tally.used = used = used + 1
        second = int(now)
        if second != lane.second:
            # now is inside the window, so the reset is 1 to `window` seconds away,
            # as Decision.headers() clamps it.
            lane.tail = b";t=%d" % (lane.reset_at - second)
            lane.second = second
        left = b"%d" % (lane.limit - used)
        parts = lane.parts
        state.headers = [
            parts[0],
            (b"x-ratelimit-remaining", left),
            lane.reset,
            parts[1],
            (b"ratelimit", lane.named + left + lane.tail),
        ]
        state.express = (lane, used, now)
        return True

    def open(
        self,
        authorization: bytes,
        token: str,
        principal: Principal,
        plan: Plan,
        key: str,
        quota: Quota,
    ) -> None:
        """Open a lane for ``authorization`` after the whole admission admitted its
        bearer ``token`` as ``principal``, counting against ``key``: when the
        authenticator leases that principal and the limiter keeps a live tally for
        ``key`` (a fixed window)."""
        tally = self.limiter.tally(key, quota)
        if tally is None:
            return
        lease = self.keys.lease(token)
        if lease is None or lease[0] is not principal:
            return
        if len(self.lanes) >= ADMITTED_ENTRIES:
            self.lanes.clear()
        self.lanes[authorization] = Lane(
            self.product, principal, plan, quota, tally, lease[1], self.keys.generation
        )
