"""Days of a time zone in 15-minute UTC buckets, for the analytics' day bucketing.

The analytics group clicks by the caller's days. A day of a zone is a range of UTC
buckets (:data:`tollway_link.store.BUCKET_SECONDS`): 96 of them on an ordinary day,
92 or 100 on a day when clocks change. The database knows nothing of zones: the
boundaries are worked out here, from :mod:`zoneinfo`, and handed to the SQL as numbers.

Inside a stretch of constant UTC offset ``offset`` (in buckets), the local day of
bucket ``b`` is ``(b + offset) // 96`` days after 1970-01-01: the SQL computes it with
one such expression per stretch (:func:`pieces`). Offsets are whole quarter hours in
every zone today; a zone's historic odd offset (local mean time) is taken to the
quarter hour below.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from tollway_link.store import BUCKET_SECONDS

EPOCH = date(1970, 1, 1)


@dataclass(frozen=True, slots=True)
class Day:
    """One local day: buckets ``start`` to ``end`` (excluded)."""

    date: date
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Piece:
    """From bucket ``start`` on (until the next piece), the zone is ``offset`` buckets
    ahead of UTC."""

    start: int
    offset: int


def _start(day: date, zone: ZoneInfo) -> int:
    """The first bucket of ``day`` in ``zone`` (a midnight that clocks skip begins the
    day at the end of the gap, which is where ``zoneinfo`` puts it)."""
    moment = datetime.combine(day, time(), tzinfo=zone).astimezone(UTC)
    return int(moment.timestamp()) // BUCKET_SECONDS


def days(zone: ZoneInfo, first: date, last: date) -> list[Day]:
    """The days ``first`` to ``last`` (included), oldest first."""
    count = (last - first).days + 1
    starts = [_start(first + timedelta(days=n), zone) for n in range(count + 1)]
    return [Day(first + timedelta(days=n), starts[n], starts[n + 1]) for n in range(count)]


def offset_at(bucket: int, zone: ZoneInfo) -> int:
    """``zone``'s UTC offset at ``bucket``, in buckets."""
    moment = datetime.fromtimestamp(bucket * BUCKET_SECONDS, tz=zone)
    offset = moment.utcoffset()
    assert offset is not None
    return int(offset.total_seconds()) // BUCKET_SECONDS


def pieces(zone: ZoneInfo, period: list[Day]) -> list[Piece]:
    """The stretches of constant offset covering ``period``'s buckets, in order. Clocks
    change at most once a day: a day whose first and last buckets have different
    offsets changes at the first bucket with the last one's (found by bisection)."""
    found = [Piece(period[0].start, offset_at(period[0].start, zone))]
    for day in period:
        if (start := offset_at(day.start, zone)) != found[-1].offset:
            found.append(Piece(day.start, start))
        end = offset_at(day.end - 1, zone)
        if end == start:
            continue
        low, high = day.start, day.end - 1
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if offset_at(middle, zone) == end else (middle, high)
        found.append(Piece(high, end))
    return found


def local_date(day_number: int) -> date:
    """The date of a local day number (days after 1970-01-01)."""
    return EPOCH + timedelta(days=day_number)
