"""The chat product's report for the analytics product: ``chat.conversations``, the
conversations opened and resolved per day, week or month of the caller's calendar, and
how long contacts waited for a first reply.

Every number is counted by the database, a row per day (or per UTC bucket on SQLite,
:class:`~tollway.local_day`), never one per conversation or message, except SQLite's
medians (below).

* ``opened``: conversations created in the bucket, whatever their status now.
* ``resolved``: conversations whose status is ``resolved``, in the bucket of their
  ``updated_at``. Chat keeps no resolution time: ``updated_at`` is when the status last
  changed, unless an agent wrote or the assignee changed since (which moves it later).
  A conversation resolved, reopened and resolved again counts once, on the last day.
* ``median_first_response_seconds``: over the conversations opened in the bucket, the
  median time from the contact's first message to the first agent message after it
  (private notes left out); conversations without either are left out, and a bucket
  with none is ``None``. PostgreSQL computes it (``percentile_cont(0.5)``, per bucket
  and for the period in one statement, ``ROLLUP``); SQLite has no percentile, so it
  returns one duration per replied conversation, to the millisecond, and Python takes
  the medians.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import defaultdict
from datetime import date
from typing import Any

from sqlalchemy import Date, DateTime, Integer, String, bindparam, cast, false, func, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from tollway import (
    Column,
    Days,
    Gateway,
    Period,
    Reads,
    Report,
    ReportData,
    local_day,
    utc_instant,
)
from tollway_chat.models import Conversation, Message

RESOLVED = "resolved"

ACCOUNT = bindparam("account_id", type_=Integer, literal_execute=True)
START = bindparam("start", type_=Integer, literal_execute=True)
"""The instant the range's first day starts, in epoch seconds."""
END = bindparam("end", type_=Integer, literal_execute=True)
"""The instant its last day ends."""
SECONDS = bindparam("seconds", type_=Integer, literal_execute=True)
"""SQLite's bucket, in seconds."""
ZONE = bindparam("zone", type_=String)
GRANULARITY = bindparam("granularity", type_=String)
"""``day``, ``week`` or ``month``: PostgreSQL's ``date_trunc`` has units of the same names
(its week starts on Monday)."""
# The account and the range are written into the SQL as numbers, as the point of
# sale's reports do: a generic plan would not know how many rows they hold.
_FROM = utc_instant(START)
_TO = utc_instant(END)


class seconds_between(FunctionElement[float]):
    """``seconds_between(later, earlier)``: the seconds from one instant to the other;
    SQLite's to the millisecond, as its date functions count. Untyped: the read path
    gives a ``Float`` column asyncpg's numeric conversion, which needs the column's type
    from a result it compiles without; the drivers return floats themselves."""

    inherit_cache = True


@compiles(seconds_between)
def _sqlite_seconds(element: seconds_between, compiler: Any, **kw: Any) -> str:
    later, earlier = (compiler.process(clause, **kw) for clause in element.clauses)
    return f"ROUND((julianday({later}) - julianday({earlier})) * 86400.0, 3)"


@compiles(seconds_between, "postgresql")
def _postgresql_seconds(element: seconds_between, compiler: Any, **kw: Any) -> str:
    later, earlier = (compiler.process(clause, **kw) for clause in element.clauses)
    return f"CAST(EXTRACT(EPOCH FROM ({later} - {earlier})) AS DOUBLE PRECISION)"


def _day(instant: Any) -> Any:
    return local_day(instant, ZONE, START, SECONDS)


def _count_by_day(instant: Any, *conditions: Any) -> Any:
    """The account's conversations whose ``instant`` is in the range, per local day."""
    days = (
        select(_day(instant).label("day"))
        .where(Conversation.account_id == ACCOUNT, instant >= _FROM, instant < _TO, *conditions)
        .subquery()
    )
    return select(days.c.day, func.count()).group_by(days.c.day)


OPENED = _count_by_day(Conversation.created_at)
"""Conversations created per local day."""
RESOLVED_BY_DAY = _count_by_day(Conversation.updated_at, Conversation.status == RESOLVED)
"""Resolved conversations per local day of their last change."""

_FIRST_MESSAGE = (
    select(
        Message.conversation_id,
        Conversation.created_at,
        func.min(Message.created_at).label("at"),
    )
    .join(Conversation, Conversation.id == Message.conversation_id)
    .where(
        Conversation.account_id == ACCOUNT,
        Conversation.created_at >= _FROM,
        Conversation.created_at < _TO,
        Message.type == "incoming",
    )
    .group_by(Message.conversation_id, Conversation.created_at)
    .subquery()
)
_FIRST_REPLY = (
    select(func.min(Message.created_at))
    .where(
        Message.conversation_id == _FIRST_MESSAGE.c.conversation_id,
        Message.type == "outgoing",
        Message.private == false(),
        Message.created_at >= _FIRST_MESSAGE.c.at,
    )
    .scalar_subquery()
)
_RESPONSES = select(
    _FIRST_MESSAGE.c.created_at.label("opened_at"),
    seconds_between(_FIRST_REPLY, _FIRST_MESSAGE.c.at).label("seconds"),
).subquery()
_REPLIED = _RESPONSES.c.seconds.is_not(None)

FIRST_RESPONSES = select(_day(_RESPONSES.c.opened_at), _RESPONSES.c.seconds).where(_REPLIED)
"""SQLite's: each replied conversation opened in the range, its local day and how long
its contact waited."""
_BUCKETED = (
    select(
        cast(
            func.date_trunc(GRANULARITY, cast(_day(_RESPONSES.c.opened_at), DateTime)), Date
        ).label("bucket"),
        _RESPONSES.c.seconds,
    )
    .where(_REPLIED)
    .subquery()
)
MEDIAN_FIRST_RESPONSES = select(
    _BUCKETED.c.bucket,
    func.percentile_cont(0.5).within_group(_BUCKETED.c.seconds),
).group_by(func.rollup(_BUCKETED.c.bucket))
"""PostgreSQL's: the median wait per bucket (its first day) of conversations opened in
the range, and with no bucket the period's."""


def _row(*columns: Any) -> tuple[Any, ...]:
    return columns


async def _medians(
    reads: Reads, period: Period, days: Days, params: dict[str, Any]
) -> tuple[dict[date, float], float | None]:
    """The median first response per bucket that has one, and over the period."""
    if reads.dialect == "postgresql":
        by_bucket: dict[date, float] = {}
        overall = None
        for bucket, median in await reads.all(MEDIAN_FIRST_RESPONSES, _row, **params):
            if bucket is None:
                overall = median
            else:
                by_bucket[period.bucket(days.day_of(bucket))] = median
        return by_bucket, overall
    waits: defaultdict[date, list[float]] = defaultdict(list)
    for key, seconds in await reads.all(FIRST_RESPONSES, _row, **params):
        waits[period.bucket(days.day_of(key))].append(seconds)
    every = [seconds for bucket in waits.values() for seconds in bucket]
    return (
        {bucket: statistics.median(found) for bucket, found in waits.items()},
        statistics.median(every) if every else None,
    )


async def conversations(gateway: Gateway, period: Period) -> ReportData:
    """Conversations opened and resolved per bucket, and the median first response."""
    reads = gateway.database.reads
    days = period.days
    params = days.params(period.account_id) | {"granularity": period.granularity}
    opened, resolved, (medians, overall) = await asyncio.gather(
        reads.all(OPENED, _row, **params),
        reads.all(RESOLVED_BY_DAY, _row, **params),
        _medians(reads, period, days, params),
    )
    counts = [(key, n, 0) for key, n in opened] + [(key, 0, n) for key, n in resolved]
    series = [
        point | {"median_first_response_seconds": medians.get(point["date"])}
        for point in period.series(counts, ("opened", "resolved"), days)
    ]
    return ReportData(
        summary={
            "opened": sum(point["opened"] for point in series),
            "resolved": sum(point["resolved"] for point in series),
            "median_first_response_seconds": overall,
        },
        series=series,
    )


CONVERSATIONS = Report(
    "chat.conversations",
    "Conversations",
    "Conversations opened and resolved, and the median time from a contact's first "
    "message to an agent's first reply.",
    conversations,
    summary=(
        Column("opened", "count"),
        Column("resolved", "count"),
        Column("median_first_response_seconds", "seconds", "Median first response"),
    ),
    series=(
        Column("opened", "count"),
        Column("resolved", "count"),
        Column("median_first_response_seconds", "seconds", "Median first response"),
    ),
)
