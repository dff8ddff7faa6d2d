"""A Redis rate limiter: one Lua script per call, so every gateway process shares the count."""

from __future__ import annotations

import os

import redis.asyncio
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript

from tollway.ratelimit.base import Algorithm, Decision, Quota, RateLimiterUnavailable, decide

# Errors that mean "Redis cannot serve us right now", as opposed to a bug in a script.
_UNAVAILABLE: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,  # includes BusyLoadingError and MaxConnectionsError
    redis.exceptions.TimeoutError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.OutOfMemoryError,
    redis.exceptions.MasterDownError,
    OSError,
)

# The scripts read the clock with TIME so that gateways with skewed clocks agree. Times
# are in microseconds; numbers handed to redis.call go through '%.0f' because Lua would
# print a 16-digit number in exponent form and lose precision. Each script returns
# {allowed, used, reset, now}.

_FIXED_HIT = """
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local index = math.floor(now / window)
local reset = (index + 1) * window
-- One key per window: a counter left over from the previous window can never be
-- mistaken for the current one, however Redis' expiry and TIME interleave.
local key = KEYS[1] .. ':' .. string.format('%.0f', index)
local used = tonumber(redis.call('GET', key) or '0')
if used >= limit then
    return {0, used, reset, now}
end
used = redis.call('INCR', key)
if used == 1 then
    redis.call('PEXPIREAT', key, string.format('%.0f', reset / 1000))
end
return {1, used, reset, now}
"""

_FIXED_PEEK = """
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local index = math.floor(now / window)
local used = tonumber(redis.call('GET', KEYS[1] .. ':' .. string.format('%.0f', index)) or '0')
return {used < limit and 1 or 0, used, (index + 1) * window, now}
"""

_SLIDING_HIT = """
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%.0f', now - window))
local used = redis.call('ZCARD', key)
local allowed = 0
if used < limit then
    -- The client's random suffix keeps members unique when two hits share a microsecond.
    redis.call('ZADD', key, string.format('%.0f', now), t[1] .. '.' .. t[2] .. ':' .. ARGV[3])
    redis.call('PEXPIRE', key, ARGV[2] * 1000)
    used = used + 1
    allowed = 1
end
local reset = now + window
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
if oldest[2] then
    reset = tonumber(oldest[2]) + window
end
return {allowed, used, reset, now}
"""

_SLIDING_PEEK = """
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local after = '(' .. string.format('%.0f', now - window)
local used = redis.call('ZCOUNT', KEYS[1], after, '+inf')
local reset = now + window
local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], after, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if oldest[2] then
    reset = tonumber(oldest[2]) + window
end
return {used < limit and 1 or 0, used, reset, now}
"""


class RedisRateLimiter:
    """Rate limits shared by every process using the same Redis and ``prefix``.

    Each call is one round trip (an ``EVALSHA``); after a Redis restart redis-py
    reconnects and reloads the scripts by itself, so the same instance keeps working.
    Keys are ``<prefix><algorithm>:<window>:<key>``, plus ``:<window number>`` for
    fixed windows, and expire once their window is over. A client passed in directly
    is used with its own timeouts and retries; :meth:`from_url` sets ones suited to
    a check on every request.
    """

    def __init__(self, client: redis.asyncio.Redis, prefix: str = "tollway:rl:") -> None:
        self._client = client
        self._prefix = prefix
        self._fixed_hit = client.register_script(_FIXED_HIT)
        self._fixed_peek = client.register_script(_FIXED_PEEK)
        self._sliding_hit = client.register_script(_SLIDING_HIT)
        self._sliding_peek = client.register_script(_SLIDING_PEEK)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = "tollway:rl:",
        timeout: float = 0.25,
        max_connections: int = 50,
    ) -> RedisRateLimiter:
        """A limiter with its own client, whose every call gives up after ``timeout`` s.

        A burst of more than ``max_connections`` concurrent calls queues for a
        connection (for at most ``timeout`` s too) instead of failing at once.
        """
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=timeout,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            # One immediate retry on a connection error replaces a pooled connection
            # that died with a Redis restart. Timeouts are not retried: the script may
            # have run, and a retry would count the request twice.
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,)),
        )
        return cls(redis.asyncio.Redis.from_pool(pool), prefix)

    async def hit(self, key: str, quota: Quota) -> Decision:
        """Count one request for ``key`` if the quota allows it, and say whether it does."""
        if quota.algorithm is Algorithm.FIXED_WINDOW:
            return await self._run(self._fixed_hit, key, quota)
        return await self._run(self._sliding_hit, key, quota, os.urandom(8).hex())

    async def peek(self, key: str, quota: Quota) -> Decision:
        """The state of ``key`` without counting anything."""
        if quota.algorithm is Algorithm.FIXED_WINDOW:
            return await self._run(self._fixed_peek, key, quota)
        return await self._run(self._sliding_peek, key, quota)

    async def close(self) -> None:
        """Close the Redis client."""
        await self._client.aclose()

    async def _run(self, script: AsyncScript, key: str, quota: Quota, *extra: str) -> Decision:
        name = f"{self._prefix}{quota.algorithm}:{quota.window}:{key}"
        try:
            allowed, used, reset, now = await script(
                keys=[name], args=[quota.limit, quota.window, *extra]
            )
        except _UNAVAILABLE as exc:
            raise RateLimiterUnavailable(f"redis rate limiter: {exc}") from exc
        return decide(quota, allowed=bool(allowed), used=used, reset=reset / 1e6, now=now / 1e6)
