"""Redis specifics: agreement across processes, one round trip, outages and recovery."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis
import redis.asyncio

from tollway.ratelimit import Algorithm, Quota, RateLimiterUnavailable, RedisRateLimiter
from tollway.testing import RedisServer


@pytest.fixture
async def limiter(redis_url: str, redis_prefix: str) -> AsyncIterator[RedisRateLimiter]:
    limiter = RedisRateLimiter.from_url(redis_url, prefix=redis_prefix)
    yield limiter
    await limiter.close()


class CountingConnection(redis.asyncio.Connection):
    """A real connection that counts its writes: each one is a round trip."""

    writes = 0

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.writes += 1
        await super().send_packed_command(command, check_health)


async def test_hit_and_peek_are_one_round_trip_each(own_redis: RedisServer) -> None:
    pool = redis.asyncio.ConnectionPool(
        connection_class=CountingConnection, host="127.0.0.1", port=own_redis.port
    )
    limiter = RedisRateLimiter(redis.asyncio.Redis.from_pool(pool))
    quotas = [Quota(10, 60, algorithm) for algorithm in Algorithm]
    # The first calls connect and load the scripts; steady state is what matters.
    for quota in quotas:
        await limiter.hit("k", quota)
        await limiter.peek("k", quota)

    before = own_redis.info("commandstats")
    for quota in quotas:
        for call in (limiter.hit, limiter.peek):
            writes = CountingConnection.writes
            await call("k", quota)
            assert CountingConnection.writes - writes == 1, (call.__name__, quota.algorithm)
    after = own_redis.info("commandstats")
    await limiter.close()

    def calls(stats: dict[str, Any], command: str) -> int:
        return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))

    # Server side: four EVALSHAs, and no SCRIPT LOAD or EVAL fallback behind them.
    assert calls(after, "evalsha") - calls(before, "evalsha") == 4
    assert calls(after, "eval") == calls(before, "eval")
    assert calls(after, "script") == calls(before, "script")


async def test_concurrent_checks_share_round_trips_and_stay_exact(own_redis: RedisServer) -> None:
    limiter = RedisRateLimiter.from_url(own_redis.url)
    await limiter.peek("warm-up", Quota(1, 60))
    for algorithm in Algorithm:
        quota = Quota(50, 60, algorithm)
        before = own_redis.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
        decisions = await asyncio.gather(
            *(limiter.hit(f"{algorithm}-{i % 3}", quota) for i in range(300))
        )
        after = own_redis.info("commandstats")["cmdstat_evalsha"]["calls"]
        # 300 checks made in one event-loop turn: two script calls (256 per call).
        assert after - before == 2
        for key in range(3):
            admitted = [d for i, d in enumerate(decisions) if i % 3 == key and d.allowed]
            assert len(admitted) == 50
            # Decided in arrival order: the first 50 of each key got in, counting down.
            mine = [d for i, d in enumerate(decisions) if i % 3 == key]
            assert [d.remaining for d in mine[:50]] == list(range(49, -1, -1))
            assert not any(d.allowed for d in mine[50:])
    await limiter.close()


async def test_unreachable_redis_raises_quickly_and_the_same_limiter_recovers(
    own_redis: RedisServer,
) -> None:
    limiter = RedisRateLimiter.from_url(own_redis.url, timeout=0.25)
    fixed, sliding = (
        Quota(5, 3600, Algorithm.FIXED_WINDOW),
        Quota(5, 3600, Algorithm.SLIDING_WINDOW),
    )
    assert (await limiter.hit("k", fixed)).allowed
    assert (await limiter.hit("k", sliding)).allowed

    own_redis.stop()
    for call, quota in [(limiter.hit, fixed), (limiter.peek, sliding)]:
        started = time.perf_counter()
        with pytest.raises(RateLimiterUnavailable) as raised:
            await call("k", quota)
        assert time.perf_counter() - started < 0.5
        assert isinstance(raised.value.__cause__, redis.exceptions.ConnectionError)

    # A new server on the same port knows none of the scripts: the next call meets
    # NOSCRIPT, which redis-py answers by loading the script and running it again.
    own_redis.start()
    assert own_redis.info("memory")["number_of_cached_scripts"] == 0
    decision = await limiter.hit("k", fixed)
    assert (decision.allowed, decision.remaining) == (True, 4)  # the old count died with Redis
    assert (await limiter.hit("k", sliding)).remaining == 4
    assert own_redis.info("memory")["number_of_cached_scripts"] == 1
    await limiter.close()


async def test_restart_between_two_calls_is_invisible(own_redis: RedisServer) -> None:
    limiter = RedisRateLimiter.from_url(own_redis.url)
    quota = Quota(5, 3600)
    assert (await limiter.hit("k", quota)).remaining == 4
    own_redis.stop()
    own_redis.start()
    # The pooled connection died with the old server; the first call replaces it.
    assert (await limiter.hit("k", quota)).remaining == 4
    await limiter.close()


async def test_a_redis_that_never_answers_times_out() -> None:
    with socket.socket() as silent:
        # Listening but never accepting: connects succeed, replies never come.
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}"
        limiter = RedisRateLimiter.from_url(url, timeout=0.25)
        started = time.perf_counter()
        with pytest.raises(RateLimiterUnavailable) as raised:
            await limiter.hit("k", Quota(5, 60))
        assert time.perf_counter() - started < 0.9
        assert isinstance(raised.value.__cause__, redis.exceptions.TimeoutError)
        await limiter.close()


async def test_every_key_is_prefixed_and_expires(
    limiter: RedisRateLimiter, redis_url: str, redis_prefix: str
) -> None:
    for algorithm in Algorithm:
        await limiter.hit("k", Quota(5, 3600, algorithm))
    client = redis.asyncio.Redis.from_url(redis_url)
    keys = [key async for key in client.scan_iter(match=f"{redis_prefix}*")]
    assert len(keys) == 2
    for key in keys:
        assert 0 < await client.pttl(key) <= 3600 * 1000
    await client.aclose()


_WORKER = """
import asyncio, random, sys

from tollway.ratelimit import Algorithm, Quota, RedisRateLimiter

async def main(url, prefix, algorithm):
    limiter = RedisRateLimiter.from_url(url, prefix=prefix, timeout=5, max_connections=100)
    quota = Quota(100, 3600, Algorithm(algorithm))
    # Open every connection now, so the hits after "go" race each other, not connects.
    await asyncio.gather(*(limiter.peek("warm-up", quota) for _ in range(100)))
    print("ready", flush=True)
    sys.stdin.readline()

    async def one():
        # Spread over 50 ms, so all three processes are sending at once instead of
        # whichever woke first taking every slot in a single burst.
        await asyncio.sleep(random.random() * 0.05)
        return await limiter.hit("shared", quota)

    decisions = await asyncio.gather(*(one() for _ in range(100)))
    print(sum(d.allowed for d in decisions), flush=True)
    await limiter.close()

asyncio.run(main(*sys.argv[1:]))
"""


@pytest.mark.parametrize("algorithm", list(Algorithm))
def test_processes_sharing_redis_admit_exactly_the_limit(
    redis_url: str, redis_prefix: str, algorithm: Algorithm
) -> None:
    until_reset = 3600 - time.time() % 3600
    if until_reset < 5:
        time.sleep(until_reset + 0.1)  # the hour's fixed window must not reset mid-test
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, redis_url, redis_prefix, algorithm],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None
            assert worker.stdout.readline().strip() == "ready"
        # Release them together so their hits really interleave in Redis.
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        admitted = [int(worker.communicate(timeout=30)[0]) for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    assert [worker.returncode for worker in workers] == [0, 0, 0]
    assert sum(admitted) == 100, admitted
    assert sorted(admitted)[1] > 0, f"the processes did not really compete: {admitted}"
