"""Rate limiter types shared by every backend: quotas, decisions and the protocol."""

from __future__ import annotations

import enum
import math
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

import msgspec


class Algorithm(enum.StrEnum):
    """How requests are counted against a quota."""

    FIXED_WINDOW = "fixed"
    """A counter per window; windows are aligned to the epoch, so a day resets at 00:00 UTC."""

    SLIDING_WINDOW = "sliding"
    """An exact log of admitted requests over the last ``window`` seconds."""


@dataclass(frozen=True, slots=True)
class Quota:
    """``limit`` requests per ``window`` seconds, named ``policy`` in the response headers."""

    limit: int
    window: int
    algorithm: Algorithm = Algorithm.FIXED_WINDOW
    policy: str = "default"
    header_parts: HeaderParts = field(init=False, repr=False, compare=False)
    """The response headers that are the same for every decision on this quota."""

    def __post_init__(self) -> None:
        if self.limit < 0:
            raise ValueError(f"quota limit must be >= 0, got {self.limit}")
        if self.window < 1:
            raise ValueError(f"quota window must be >= 1 second, got {self.window}")
        # Plain strings are accepted so quotas can come straight from config files.
        object.__setattr__(self, "algorithm", Algorithm(self.algorithm))
        # The policy goes verbatim into a structured-field string, which only allows
        # printable ASCII; rejecting others here keeps headers() free of checks.
        if not all(" " <= ch <= "~" for ch in self.policy):
            raise ValueError(f"quota policy must be printable ASCII, got {self.policy!r}")
        object.__setattr__(self, "header_parts", _fixed_parts(self.policy, self.limit, self.window))


class Decision(msgspec.Struct, frozen=True, gc=False):
    """The outcome of one rate limit check, with everything a response needs to report it.

    A ``msgspec.Struct``: one is built per request, and it builds 4x faster than a
    frozen dataclass.
    """

    allowed: bool
    limit: int
    remaining: int
    reset_at: int
    """Epoch seconds, rounded up, when the window resets (fixed) or a slot frees (sliding)."""
    retry_after: int
    """Seconds to wait (at least 1) when denied; 0 when allowed."""
    policy: str
    window: int
    parts: HeaderParts | None = None
    """The quota's fixed headers (:attr:`Quota.header_parts`), when decided from one."""
    decided_at: float = 0.0
    """Epoch seconds on the backend's clock when decided; 0: unknown."""

    def headers(
        self, now: float | None = None, *, retry_after: bool = True
    ) -> list[tuple[bytes, bytes]]:
        """ASGI response headers: ``X-RateLimit-*``, the IETF ``RateLimit`` and
        ``RateLimit-Policy`` fields, and ``Retry-After`` when denied.

        ``now`` (epoch seconds; default: when decided, else the wall clock) turns
        ``reset_at`` into the relative ``t=`` the IETF draft asks for. ``retry_after=False`` leaves
        ``Retry-After`` out even when denied: for a response that only reports the
        window (a 403 after a peek), since ``Retry-After`` belongs to the 429 alone.
        """
        if now is None:
            now = self.decided_at or time.time()
        # reset_at is rounded up and now down, so this errs late, never early; no
        # reset is ever more than a window away.
        reset_at = self.reset_at
        reset_in = reset_at - int(now)
        if reset_in > self.window:
            reset_in = self.window
        elif reset_in < 0:
            reset_in = 0
        parts = self.parts or _fixed_parts(self.policy, self.limit, self.window)
        remaining = b"%d" % self.remaining
        headers = [
            parts[0],
            (b"x-ratelimit-remaining", remaining),
            (b"x-ratelimit-reset", b"%d" % reset_at),
            parts[1],
            (b"ratelimit", b"%s;r=%s;t=%d" % (parts[2], remaining, reset_in)),
        ]
        if retry_after and not self.allowed:
            headers.append((b"retry-after", b"%d" % self.retry_after))
        return headers


HeaderParts = tuple[tuple[bytes, bytes], tuple[bytes, bytes], bytes]
"""``X-RateLimit-Limit``, ``RateLimit-Policy`` and the policy's quoted name."""


@lru_cache(maxsize=1024)
def _fixed_parts(policy: str, limit: int, window: int) -> HeaderParts:
    # A quota's limit and policy headers are the same on every response: built once.
    name = _sf_string(policy)
    return (
        (b"x-ratelimit-limit", b"%d" % limit),
        (b"ratelimit-policy", b"%s;q=%d;w=%d" % (name, limit, window)),
        name,
    )


@lru_cache(maxsize=256)
def _sf_string(value: str) -> bytes:
    # Policies are few and reused on every request, so the quoting is done once each.
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'.encode("ascii")


def decide(quota: Quota, *, allowed: bool, used: int, reset: float, now: float) -> Decision:
    """Build a :class:`Decision` from a backend's raw numbers.

    ``used`` counts requests in the window including this one when admitted; ``reset``
    and ``now`` are epoch seconds on the backend's own clock, so ``retry_after`` does
    not depend on how far the local clock is from the backend's.
    """
    # Positional and without max(): built on every request, so every call counts.
    limit = quota.limit
    remaining = limit - used if used < limit else 0
    retry_after = 0 if allowed else max(1, math.ceil(reset - now))
    return Decision(
        allowed,
        limit,
        remaining,
        math.ceil(reset),
        retry_after,
        quota.policy,
        quota.window,
        quota.header_parts,
        now,
    )


class RateLimiterUnavailable(Exception):
    """The backend could not be reached; the caller applies the failure policy."""


class RateLimiter(Protocol):
    """Counts requests per key against a :class:`Quota`.

    A limiter that never waits may also offer ``hit_now(key, quota) -> Decision``,
    :meth:`hit` as a plain call; the request path uses it when it is there (the
    in-memory limiter does), saving a coroutine per request. One that keeps its counts
    in the process may also offer ``clock`` (its epoch seconds) and ``tally(key,
    quota)``, the live count of a fixed window
    (:class:`~tollway.ratelimit.memory.Tally`), which a route's express lanes count on
    directly (:mod:`tollway.admission.express`).
    """

    async def hit(self, key: str, quota: Quota) -> Decision:
        """Count one request for ``key`` if the quota allows it, and say whether it does."""
        ...

    async def peek(self, key: str, quota: Quota) -> Decision:
        """The state of ``key`` without counting anything; ``allowed`` tells whether a
        hit now would be admitted."""
        ...

    async def close(self) -> None:
        """Release the backend's resources."""
        ...
