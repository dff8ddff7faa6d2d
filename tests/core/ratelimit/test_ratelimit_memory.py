"""The in-process limiter's own concerns: epoch alignment and bounded memory."""

from __future__ import annotations

import pytest

from tollway.ratelimit import Algorithm, MemoryRateLimiter, Quota, RateLimiter

MIDNIGHT = 1_700_006_400.0  # 2023-11-15T00:00:00Z


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_is_a_rate_limiter() -> None:
    limiter: RateLimiter = MemoryRateLimiter()
    assert limiter is not None


async def test_a_day_window_resets_at_midnight_utc() -> None:
    clock = FakeClock(MIDNIGHT + 13 * 3600)
    limiter = MemoryRateLimiter(clock)
    daily = Quota(1, 86400, policy="daily")
    first = await limiter.hit("k", daily)
    assert first.reset_at == MIDNIGHT + 86400
    clock.now = MIDNIGHT + 86400 - 0.1
    denied = await limiter.hit("k", daily)
    assert (denied.allowed, denied.retry_after) == (False, 1)
    clock.now = MIDNIGHT + 86400
    assert (await limiter.hit("k", daily)).allowed


@pytest.mark.parametrize("algorithm", list(Algorithm))
async def test_expired_keys_are_pruned(algorithm: Algorithm) -> None:
    clock = FakeClock(MIDNIGHT)
    limiter = MemoryRateLimiter(clock)
    quota = Quota(3, 60, algorithm)
    for i in range(1000):
        await limiter.hit(f"old-{i}", quota)
    await limiter.hit("live", quota)
    clock.now += 59
    await limiter.hit("live", quota)
    assert len(limiter) == 1001

    # t = 100: every old-* key is stale. So is "live" under the fixed window (a new
    # one began at t = 60), but its sliding log still holds the hit from t = 59.
    clock.now += 41
    for i in range(1000):
        await limiter.hit(f"new-{i}", quota)
    assert len(limiter) == 1000 + (algorithm is Algorithm.SLIDING_WINDOW)


async def test_a_long_window_does_not_hold_up_pruning_of_short_ones() -> None:
    clock = FakeClock(MIDNIGHT)
    limiter = MemoryRateLimiter(clock)
    await limiter.hit("daily", Quota(5, 86400))
    for i in range(100):
        await limiter.hit(f"old-{i}", Quota(5, 1, Algorithm.SLIDING_WINDOW))
    clock.now += 10
    for i in range(100):
        await limiter.hit(f"new-{i}", Quota(5, 1, Algorithm.SLIDING_WINDOW))
    assert len(limiter) == 101


async def test_pruning_keeps_live_counts() -> None:
    clock = FakeClock(MIDNIGHT)
    limiter = MemoryRateLimiter(clock)
    quota = Quota(2, 10, Algorithm.SLIDING_WINDOW)
    await limiter.hit("stale", quota)
    clock.now += 5
    await limiter.hit("live", quota)
    clock.now += 6  # "stale" aged out, "live" still holds one of its two slots
    for i in range(10):
        await limiter.hit(f"other-{i}", quota)
    assert (await limiter.peek("live", quota)).remaining == 1


async def test_a_log_emptied_by_peek_is_pruned_like_any_stale_one() -> None:
    clock = FakeClock(MIDNIGHT)
    limiter = MemoryRateLimiter(clock)
    quota = Quota(2, 1, Algorithm.SLIDING_WINDOW)
    await limiter.hit("a", quota)
    clock.now += 2
    assert (await limiter.peek("a", quota)).remaining == 2
    await limiter.hit("b", quota)
    assert len(limiter) == 1


@pytest.mark.parametrize("algorithm", list(Algorithm))
async def test_peeks_and_denials_store_nothing(algorithm: Algorithm) -> None:
    limiter = MemoryRateLimiter(FakeClock(MIDNIGHT))
    for i in range(100):
        await limiter.peek(f"k{i}", Quota(5, 60, algorithm))
        await limiter.hit(f"k{i}", Quota(0, 60, algorithm))
    assert len(limiter) == 0


async def test_close_forgets_everything() -> None:
    limiter = MemoryRateLimiter(FakeClock(MIDNIGHT))
    quota = Quota(1, 60)
    await limiter.hit("k", quota)
    await limiter.close()
    assert len(limiter) == 0
    assert (await limiter.hit("k", quota)).allowed
