"""Quota validation and the response headers a Decision produces."""

from __future__ import annotations

import dataclasses
import time

import pytest

from tollway.ratelimit import Algorithm, Decision, Quota


def decision(*, allowed: bool = True, policy: str = "daily", reset_at: int = 1_000_060) -> Decision:
    return Decision(
        allowed=allowed,
        limit=100,
        remaining=7 if allowed else 0,
        reset_at=reset_at,
        retry_after=0 if allowed else 42,
        policy=policy,
        window=86400,
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"limit": -1, "window": 60},
        {"limit": 1, "window": 0},
        {"limit": 1, "window": 60, "policy": "déjà"},
        {"limit": 1, "window": 60, "policy": "a\nb"},
        {"limit": 1, "window": 60, "algorithm": "leaky"},
    ],
)
def test_invalid_quotas_are_rejected(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
        Quota(**kwargs)  # type: ignore[arg-type]


def test_quota_defaults_and_string_algorithms() -> None:
    assert Quota(10, 60) == Quota(10, 60, Algorithm.FIXED_WINDOW, "default")
    assert Quota(10, 60, "sliding").algorithm is Algorithm.SLIDING_WINDOW  # type: ignore[arg-type]


def test_quota_and_decision_are_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Quota(10, 60).limit = 5  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        decision().allowed = False  # type: ignore[misc]


def test_allowed_headers() -> None:
    assert decision().headers(now=1_000_000.5) == [
        (b"x-ratelimit-limit", b"100"),
        (b"x-ratelimit-remaining", b"7"),
        (b"x-ratelimit-reset", b"1000060"),
        (b"ratelimit-policy", b'"daily";q=100;w=86400'),
        (b"ratelimit", b'"daily";r=7;t=60'),
    ]


def test_denied_headers_add_retry_after() -> None:
    headers = decision(allowed=False).headers(now=1_000_000)
    assert headers[-1] == (b"retry-after", b"42")
    assert (b"ratelimit", b'"daily";r=0;t=60') in headers


def test_policy_names_are_quoted_as_structured_field_strings() -> None:
    headers = dict(decision(policy='a"b\\c').headers(now=1_000_000))
    assert headers[b"ratelimit-policy"] == b'"a\\"b\\\\c";q=100;w=86400'


def test_reset_seconds_stay_within_zero_and_the_window() -> None:
    assert dict(decision().headers(now=2_000_000))[b"ratelimit"] == b'"daily";r=7;t=0'
    far = decision(reset_at=1_000_000 + 90000).headers(now=1_000_000)
    assert dict(far)[b"ratelimit"] == b'"daily";r=7;t=86400'


def test_headers_default_to_the_wall_clock() -> None:
    reset_at = int(time.time()) + 30
    value = dict(decision(reset_at=reset_at).headers())[b"ratelimit"]
    assert value in (b'"daily";r=7;t=30', b'"daily";r=7;t=29')
