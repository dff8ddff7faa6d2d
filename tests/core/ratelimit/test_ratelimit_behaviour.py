"""What every backend must do, for both algorithms: run against memory and real Redis."""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tollway.ratelimit import (
    Algorithm,
    Decision,
    MemoryRateLimiter,
    Quota,
    RateLimiter,
    RedisRateLimiter,
)

# Just after a midnight UTC, so day-long fixed windows start where a reader expects.
START = 1_700_006_400.25


class FakeClock:
    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class Backend:
    """A limiter plus a way to let time pass: jump a fake clock, or really sleep."""

    limiter: RateLimiter
    clock: FakeClock | None = None

    def now(self) -> float:
        return self.clock() if self.clock is not None else time.time()

    async def sleep(self, seconds: float) -> None:
        if self.clock is not None:
            self.clock.now += seconds
        else:
            await asyncio.sleep(seconds)

    async def next_window(self, window: int, offset: float = 0.05) -> None:
        """Move just past the start of the next epoch-aligned window."""
        now = self.now()
        await self.sleep((now // window + 1) * window + offset - now)

    async def clear_of_boundary(self, window: int, margin: float = 0.5) -> None:
        """Make sure the next ``margin`` seconds stay inside one fixed window, so a
        real-time test never straddles a reset by bad luck."""
        now = self.now()
        if (now // window + 1) * window - now < margin:
            await self.next_window(window)


@pytest.fixture(params=["memory", "redis"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    if request.param == "memory":
        clock = FakeClock()
        yield Backend(MemoryRateLimiter(clock), clock)
        return
    # Only the Redis half needs Redis, so a machine without one still runs the rest.
    redis_url: str = request.getfixturevalue("redis_url")
    prefix: str = request.getfixturevalue("redis_prefix")
    limiter = RedisRateLimiter.from_url(redis_url, prefix=prefix)
    yield Backend(limiter)
    await limiter.close()


@pytest.fixture(params=list(Algorithm))
def algorithm(request: pytest.FixtureRequest) -> Algorithm:
    return Algorithm(request.param)


def parse(decision: Decision, now: float) -> dict[str, str]:
    headers = decision.headers(now)
    assert all(name == name.lower() for name, _ in headers), "ASGI wants lower-case names"
    parsed = {name.decode("ascii"): value.decode("ascii") for name, value in headers}
    assert len(parsed) == len(headers), "no header twice"
    return parsed


async def test_admits_exactly_limit_then_denies(backend: Backend, algorithm: Algorithm) -> None:
    quota = Quota(5, 3600, algorithm)
    await backend.clear_of_boundary(quota.window)
    decisions = [await backend.limiter.hit("k", quota) for _ in range(8)]
    assert [d.allowed for d in decisions] == [True] * 5 + [False] * 3
    assert [d.remaining for d in decisions] == [4, 3, 2, 1, 0, 0, 0, 0]
    assert [d.retry_after for d in decisions[:5]] == [0] * 5
    assert all(d.retry_after >= 1 for d in decisions[5:])
    assert all((d.limit, d.window, d.policy) == (5, 3600, "default") for d in decisions)


async def test_headers_report_the_decision(backend: Backend, algorithm: Algorithm) -> None:
    quota = Quota(3, 60, algorithm, policy="burst")
    await backend.clear_of_boundary(quota.window, margin=2)
    await backend.limiter.hit("k", quota)
    second = await backend.limiter.hit("k", quota)

    now = backend.now()
    headers = parse(second, now)
    assert headers["x-ratelimit-limit"] == "3"
    assert headers["x-ratelimit-remaining"] == "1"
    assert headers["x-ratelimit-reset"] == str(second.reset_at)
    assert headers["ratelimit-policy"] == '"burst";q=3;w=60'
    match = re.fullmatch(r'"burst";r=(\d+);t=(\d+)', headers["ratelimit"])
    assert match is not None
    assert int(match[1]) == 1
    assert int(match[2]) == min(60, second.reset_at - int(now))
    assert int(match[2]) > 0
    assert "retry-after" not in headers

    await backend.limiter.hit("k", quota)
    denied = await backend.limiter.hit("k", quota)
    headers = parse(denied, backend.now())
    assert not denied.allowed
    assert headers["x-ratelimit-remaining"] == "0"
    assert headers["ratelimit"].startswith('"burst";r=0;t=')
    assert headers["retry-after"] == str(denied.retry_after)


async def test_fixed_window_reset_is_the_epoch_aligned_window_end(backend: Backend) -> None:
    quota = Quota(1, 60, Algorithm.FIXED_WINDOW)
    await backend.clear_of_boundary(quota.window, margin=2)
    before = backend.now()
    allowed = await backend.limiter.hit("k", quota)
    window_end = (before // 60 + 1) * 60
    assert allowed.reset_at == window_end
    await backend.sleep(0.3)
    before = backend.now()
    denied = await backend.limiter.hit("k", quota)
    after = backend.now()
    assert denied.reset_at == window_end
    assert math.ceil(window_end - after) <= denied.retry_after <= math.ceil(window_end - before)


async def test_sliding_window_reset_is_when_the_oldest_request_ages_out(
    backend: Backend,
) -> None:
    quota = Quota(1, 60, Algorithm.SLIDING_WINDOW)
    before = backend.now()
    allowed = await backend.limiter.hit("k", quota)
    after = backend.now()
    assert math.ceil(before + 60) <= allowed.reset_at <= math.ceil(after + 60)
    await backend.sleep(0.3)
    denied = await backend.limiter.hit("k", quota)
    assert denied.reset_at == allowed.reset_at
    # 59.7 s and a bit until the slot frees, rounded up.
    assert denied.retry_after == 60


async def test_fixed_window_rolls_over_at_the_boundary(backend: Backend) -> None:
    quota = Quota(2, 1, Algorithm.FIXED_WINDOW)
    await backend.clear_of_boundary(quota.window, margin=0.3)
    first = await backend.limiter.hit("k", quota)
    assert (await backend.limiter.hit("k", quota)).allowed
    denied = await backend.limiter.hit("k", quota)
    assert not denied.allowed
    assert denied.retry_after == 1

    await backend.next_window(quota.window)
    fresh = await backend.limiter.hit("k", quota)
    assert fresh.allowed
    assert fresh.remaining == 1
    assert fresh.reset_at == first.reset_at + 1


async def test_sliding_window_frees_a_slot_as_the_oldest_ages_out(backend: Backend) -> None:
    quota = Quota(2, 1, Algorithm.SLIDING_WINDOW)
    assert (await backend.limiter.hit("k", quota)).allowed  # t = 0
    await backend.sleep(0.5)
    assert (await backend.limiter.hit("k", quota)).allowed  # t = 0.5
    denied = await backend.limiter.hit("k", quota)
    assert not denied.allowed
    assert denied.retry_after == 1

    await backend.sleep(0.6)  # t = 1.1: only the first request has aged out
    freed = await backend.limiter.hit("k", quota)
    assert freed.allowed
    assert freed.remaining == 0
    assert not (await backend.limiter.hit("k", quota)).allowed

    await backend.sleep(0.5)  # t = 1.6: the second one too
    assert (await backend.limiter.hit("k", quota)).allowed


async def test_denied_hits_are_not_recorded_by_the_sliding_window(backend: Backend) -> None:
    quota = Quota(1, 1, Algorithm.SLIDING_WINDOW)
    assert (await backend.limiter.hit("k", quota)).allowed
    for _ in range(3):
        await backend.sleep(0.2)
        assert not (await backend.limiter.hit("k", quota)).allowed
    # Recorded denials would keep the window full; only the admitted hit counts.
    await backend.sleep(0.5)
    assert (await backend.limiter.hit("k", quota)).allowed


async def test_limit_zero_denies_everything(backend: Backend, algorithm: Algorithm) -> None:
    quota = Quota(0, 60, algorithm)
    for decision in [
        await backend.limiter.hit("k", quota),
        await backend.limiter.hit("k", quota),
        await backend.limiter.peek("k", quota),
    ]:
        assert not decision.allowed
        assert decision.remaining == 0
        assert 1 <= decision.retry_after <= 60


async def test_peek_counts_nothing(backend: Backend, algorithm: Algorithm) -> None:
    quota = Quota(3, 3600, algorithm)
    await backend.clear_of_boundary(quota.window)
    for _ in range(3):
        peeked = await backend.limiter.peek("k", quota)
        assert (peeked.allowed, peeked.remaining, peeked.retry_after) == (True, 3, 0)
    assert (await backend.limiter.hit("k", quota)).remaining == 2
    assert (await backend.limiter.peek("k", quota)).remaining == 2
    await backend.limiter.hit("k", quota)
    await backend.limiter.hit("k", quota)
    exhausted = await backend.limiter.peek("k", quota)
    assert (exhausted.allowed, exhausted.remaining) == (False, 0)
    assert exhausted.retry_after >= 1


async def test_keys_are_independent(backend: Backend, algorithm: Algorithm) -> None:
    quota = Quota(2, 3600, algorithm)
    await backend.clear_of_boundary(quota.window)
    for _ in range(3):
        await backend.limiter.hit("a", quota)
    assert not (await backend.limiter.peek("a", quota)).allowed
    assert (await backend.limiter.hit("b", quota)).remaining == 1


async def test_algorithms_and_windows_do_not_share_state(backend: Backend) -> None:
    fixed = Quota(1, 3600, Algorithm.FIXED_WINDOW)
    await backend.clear_of_boundary(fixed.window)
    assert (await backend.limiter.hit("k", fixed)).allowed
    assert not (await backend.limiter.hit("k", fixed)).allowed
    assert (await backend.limiter.hit("k", Quota(1, 3600, Algorithm.SLIDING_WINDOW))).allowed
    assert (await backend.limiter.hit("k", Quota(1, 7200, Algorithm.FIXED_WINDOW))).allowed


async def test_concurrent_hits_admit_exactly_the_limit(
    backend: Backend, algorithm: Algorithm
) -> None:
    quota = Quota(50, 3600, algorithm)
    await backend.clear_of_boundary(quota.window, margin=5)
    decisions = await asyncio.gather(*(backend.limiter.hit("k", quota) for _ in range(200)))
    assert sum(d.allowed for d in decisions) == 50
    assert all(d.remaining >= 0 for d in decisions)
    assert (await backend.limiter.peek("k", quota)).remaining == 0
