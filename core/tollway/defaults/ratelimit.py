"""Default rate limiter: Redis when ``redis_url`` is set, else process memory."""

from __future__ import annotations

from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl
from tollway.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter


@hookimpl(trylast=True)
def tollway_rate_limiter(gateway: Gateway) -> RateLimiter:
    settings = gateway.settings
    if settings.redis_url:
        return RedisRateLimiter.from_url(
            settings.redis_url, prefix=settings.rate_limit_prefix, timeout=settings.redis_timeout
        )
    return MemoryRateLimiter()
