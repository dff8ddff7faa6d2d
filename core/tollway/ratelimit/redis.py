"""A Redis rate limiter: one Lua script per call, so every gateway process shares the count."""

from __future__ import annotations

import asyncio
import os

import redis.asyncio
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

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

# One script decides a whole batch of checks, in order, atomically: the hits made by
# concurrent requests in one event-loop turn share a round trip. It reads the clock
# with TIME so that gateways with skewed clocks agree. Times are in microseconds;
# numbers handed to redis.call go through '%.0f' because Lua would print a 16-digit
# number in exponent form and lose precision.
#
# ARGV: the checks, five values each: op ('fixed-hit', 'fixed-peek', 'sliding-hit',
# 'sliding-peek'), key, limit, window (s), a unique member suffix (sliding hits).
# Returns {now, then allowed, used, reset for each check}.
_DECIDE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local out = {now}
for i = 1, #ARGV, 5 do
    local op, key, limit = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
    local window = tonumber(ARGV[i + 3]) * 1000000
    local allowed, used, reset
    if op == 'fixed-hit' or op == 'fixed-peek' then
        local index = math.floor(now / window)
        reset = (index + 1) * window
        -- One key per window: a counter left over from the previous window can never
        -- be mistaken for the current one, however expiry and TIME interleave.
        key = key .. ':' .. string.format('%.0f', index)
        used = tonumber(redis.call('GET', key) or '0')
        allowed = used < limit
        if allowed and op == 'fixed-hit' then
            used = redis.call('INCR', key)
            if used == 1 then
                redis.call('PEXPIREAT', key, string.format('%.0f', reset / 1000))
            end
        end
    else
        local horizon = string.format('%.0f', now - window)
        if op == 'sliding-hit' then
            redis.call('ZREMRANGEBYSCORE', key, '-inf', horizon)
            used = redis.call('ZCARD', key)
            allowed = used < limit
            if allowed then
                -- The client's suffix keeps members unique within one microsecond.
                redis.call('ZADD', key, string.format('%.0f', now),
                    t[1] .. '.' .. t[2] .. ':' .. ARGV[i + 4])
                redis.call('PEXPIRE', key, ARGV[i + 3] * 1000)
                used = used + 1
            end
        else
            used = redis.call('ZCOUNT', key, '(' .. horizon, '+inf')
            allowed = used < limit
        end
        reset = now + window
        local oldest = redis.call('ZRANGEBYSCORE', key, '(' .. horizon, '+inf',
            'WITHSCORES', 'LIMIT', 0, 1)
        if oldest[2] then
            reset = tonumber(oldest[2]) + window
        end
    end
    out[#out + 1] = allowed and 1 or 0
    out[#out + 1] = used
    out[#out + 1] = reset
end
return out
"""

_MAX_BATCH = 256
"""Checks per script call; a larger burst is split over several calls."""

_Check = tuple[str, str, Quota, str, "asyncio.Future[Decision]"]


class RedisRateLimiter:
    """Rate limits shared by every process using the same Redis and ``prefix``.

    Checks made in the same event-loop turn (concurrent requests) are sent together
    as one ``EVALSHA`` that decides them in arrival order, so a decision costs at
    most one round trip and usually a fraction of one. After a Redis restart
    redis-py reconnects and reloads the script by itself, so the same instance keeps
    working. Keys are ``<prefix><algorithm>:<window>:<key>``, plus
    ``:<window number>`` for fixed windows, and expire once their window is over. A
    client passed in directly is used with its own timeouts and retries;
    :meth:`from_url` sets ones suited to a check on every request.
    """

    def __init__(self, client: redis.asyncio.Redis, prefix: str = "tollway:rl:") -> None:
        self._client = client
        self._prefix = prefix
        self._decide = client.register_script(_DECIDE)
        self._pending: list[_Check] = []

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
            # have run, and a retry would count the requests twice.
            retry=Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,)),
        )
        return cls(redis.asyncio.Redis.from_pool(pool), prefix)

    async def hit(self, key: str, quota: Quota) -> Decision:
        """Count one request for ``key`` if the quota allows it, and say whether it does."""
        if quota.algorithm is Algorithm.FIXED_WINDOW:
            return await self._submit("fixed-hit", key, quota, "")
        return await self._submit("sliding-hit", key, quota, os.urandom(8).hex())

    async def peek(self, key: str, quota: Quota) -> Decision:
        """The state of ``key`` without counting anything."""
        operation = "fixed-peek" if quota.algorithm is Algorithm.FIXED_WINDOW else "sliding-peek"
        return await self._submit(operation, key, quota, "")

    async def close(self) -> None:
        """Close the Redis client."""
        await self._client.aclose()

    def _submit(
        self, operation: str, key: str, quota: Quota, member: str
    ) -> asyncio.Future[Decision]:
        loop = asyncio.get_running_loop()
        decision: asyncio.Future[Decision] = loop.create_future()
        if not self._pending:
            loop.call_soon(self._flush)
        name = f"{self._prefix}{quota.algorithm}:{quota.window}:{key}"
        self._pending.append((operation, name, quota, member, decision))
        return decision

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        task = asyncio.ensure_future(self._send_in_order(pending))
        _in_flight.add(task)
        task.add_done_callback(_in_flight.discard)

    async def _send_in_order(self, pending: list[_Check]) -> None:
        # One call after the other, so a burst larger than a batch is still decided
        # in arrival order.
        try:
            for start in range(0, len(pending), _MAX_BATCH):
                await self._send(pending[start : start + _MAX_BATCH])
        finally:
            # Cancelled mid-way (the loop is shutting down): nobody may wait forever.
            for *_, decision in pending:
                if not decision.done():
                    decision.cancel()

    async def _send(self, batch: list[_Check]) -> None:
        args: list[str | int] = []
        for operation, name, quota, member, _ in batch:
            args += (operation, name, quota.limit, quota.window, member)
        try:
            reply = await self._decide(args=args)
        except Exception as exc:
            error = exc
            if isinstance(exc, _UNAVAILABLE):
                error = RateLimiterUnavailable(f"redis rate limiter: {exc}")
                error.__cause__ = exc
            # Every waiting request learns of the failure; the next batch tries again.
            for *_, decision in batch:
                if not decision.done():
                    decision.set_exception(error)
            return
        now = reply[0] / 1e6
        for position, (_, _, quota, _, decision) in enumerate(batch):
            allowed, used, reset = reply[1 + 3 * position : 4 + 3 * position]
            if not decision.done():
                decision.set_result(
                    decide(quota, allowed=bool(allowed), used=used, reset=reset / 1e6, now=now)
                )


# Strong references to batches in flight: the event loop keeps only weak ones to tasks.
_in_flight: set[asyncio.Task[None]] = set()
