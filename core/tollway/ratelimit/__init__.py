"""Per-key rate limiting for the gateway, in process memory or in Redis.

Both backends implement :class:`RateLimiter`; :class:`MemoryRateLimiter` suits a single
process, :class:`RedisRateLimiter` shares the counts between every gateway process.
"""

from tollway.ratelimit.base import (
    Algorithm,
    Decision,
    Quota,
    RateLimiter,
    RateLimiterUnavailable,
)
from tollway.ratelimit.memory import MemoryRateLimiter, Tally
from tollway.ratelimit.redis import RedisRateLimiter

__all__ = [
    "Algorithm",
    "Decision",
    "MemoryRateLimiter",
    "Quota",
    "RateLimiter",
    "RateLimiterUnavailable",
    "RedisRateLimiter",
    "Tally",
]
