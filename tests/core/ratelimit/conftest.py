"""Fixtures for the rate limiter tests: the shared Redis, and a key prefix per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import redis

SHARED_REDIS_URL = os.environ.get("TOLLWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379")


def _unavailable(reason: str) -> None:
    # CI must prove the Redis backend, so a missing Redis there is a failure, not a skip.
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The shared Redis; skips (or fails on CI) when it cannot be reached."""
    client = redis.Redis.from_url(SHARED_REDIS_URL, socket_connect_timeout=0.5)
    try:
        client.ping()
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        _unavailable(f"Redis at {SHARED_REDIS_URL} is unreachable: {exc}")
    finally:
        client.close()
    return SHARED_REDIS_URL


@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix no other test uses; its keys are deleted afterwards."""
    # Synchronous on purpose: async fixtures may fetch it with request.getfixturevalue.
    prefix = f"tollway:test:rl:{uuid.uuid4().hex}:"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()
