"""What the fuzz tests share: deterministic, bounded hypothesis settings."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def budget(examples: int) -> settings:
    """``examples`` inputs, the same ones on every run (no example database, no clock):
    a fuzz test fails on every run or on none."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
