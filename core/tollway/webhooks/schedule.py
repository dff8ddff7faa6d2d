"""When a failed delivery is tried again: the retry schedule and ``Retry-After``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

DEFAULT_RETRY_SCHEDULE: tuple[float, ...] = (
    0.0,
    30.0,
    120.0,
    600.0,
    1800.0,
    3600.0,
    10800.0,
    21600.0,
)
"""Seconds to wait before each attempt, counted from the previous one: at once, then
30 s, 2 min, 10 min, 30 min, 1 h, 3 h and 6 h later. Eight attempts over about
10 h 43 min; a delivery still failing after the last one is dead-lettered."""

RETRY_AFTER_CAP = 6 * 3600.0
"""A receiver's ``Retry-After`` is honoured up to six hours, so a typo on its side
cannot park a delivery for days."""


def retry_delay(
    schedule: Sequence[float], attempts_made: int, retry_after: float | None = None
) -> float | None:
    """Seconds until the next attempt after ``attempts_made`` attempts, or ``None``
    when the schedule is used up. ``Retry-After`` can postpone an attempt, never
    hasten it: the schedule exists to spare a struggling receiver."""
    if attempts_made >= len(schedule):
        return None
    delay = float(schedule[attempts_made])
    if retry_after is not None:
        delay = max(delay, min(retry_after, RETRY_AFTER_CAP))
    return delay


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds asked for by a ``Retry-After`` header (delta-seconds or an HTTP date);
    ``None`` when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
