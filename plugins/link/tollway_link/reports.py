"""The short links product's report for the analytics product: ``link.clicks``, the
clicks on all of an account's links per day, week or month of the caller's calendar.

It reads the 15-minute traffic pre-aggregates (:class:`~tollway_link.models.Traffic`,
one row per link, UTC bucket and bot flag), never the clicks: an account's answer costs
a primary-key range per link, however many clicks the links had. Every zone's offsets
are whole quarter hours, so each local midnight starts a 15-minute bucket and a bucket
lies in one local day. The SQL sums the buckets per stretch of
:attr:`~tollway.Days.seconds` (a day where clocks hold, an hour or half an hour across
a change), counted from the range's first midnight, the same on both databases, and
Python places each stretch in the day its first bucket starts in.

Measured on PostgreSQL (2 shared cores): an account of one link with 900,000 clicks in
30 days, under 1 ms; of 2,000 links whose million clicks each fell in a quarter hour
of its own (a million traffic rows, the most a million clicks make), 100 ms.

Bots and ``HEAD`` requests are left out, as the link analytics leave them by default.
The report has no distinct visitors: the visitor structures are kept per link, and a
person who clicked two of the account's links is one visitor of each; the account's
exact count needs every visitor's quarter hours on every link (``link_visits``, about a
row per click), which is the scan the pre-aggregates exist to avoid.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Integer, bindparam, exists, false, func, select

from tollway import Column, Gateway, Period, Report, ReportData
from tollway_link.models import Link, Traffic
from tollway_link.store import BUCKET_SECONDS

ACCOUNT = bindparam("account_id", type_=Integer, literal_execute=True)
FROM = bindparam("from", type_=Integer, literal_execute=True)
"""The range's first bucket: the one its first day starts at."""
TO = bindparam("to", type_=Integer, literal_execute=True)
"""The bucket its last day ends at."""
STRIDE = bindparam("stride", type_=Integer, literal_execute=True)
""":attr:`~tollway.Days.seconds` in buckets, at least one (a zone's historic offset of
odd minutes puts its midnights off the buckets' starts)."""
# Written into the SQL as numbers, as the point of sale's reports do: as parameters
# they hide from PostgreSQL's planner how many links the account has and how long the
# range is, and after five runs of a prepared statement it keeps a generic plan.

_IN_RANGE = (Traffic.bucket >= FROM, Traffic.bucket < TO, Traffic.bot == false())
_COUNTED = (
    select(((Traffic.bucket - FROM) // STRIDE).label("stretch"), Traffic.clicks)
    .join(Link, Link.id == Traffic.link_id)
    .where(Link.account_id == ACCOUNT, *_IN_RANGE)
    .subquery()
)
CLICKS_BY_STRETCH = select(_COUNTED.c.stretch, func.sum(_COUNTED.c.clicks)).group_by(
    _COUNTED.c.stretch
)
"""The account's counted clicks per stretch of ``stride`` buckets from ``from``."""
CLICKED_LINKS = select(func.count()).where(
    Link.account_id == ACCOUNT,
    exists().where(Traffic.link_id == Link.id, *_IN_RANGE),
)
"""The account's links with a counted click from ``from`` to ``to``: a probe of the
traffic's primary key per link (the distinct links of the traffic rows took 110 ms
where this takes 10, for 2,000 links of a million rows)."""


def _row(*columns: Any) -> tuple[Any, ...]:
    return columns


def _instant(bucket: int) -> datetime:
    return datetime.fromtimestamp(bucket * BUCKET_SECONDS, UTC)


async def clicks(gateway: Gateway, period: Period) -> ReportData:
    """The account's clicks per bucket, and the links clicked in the period."""
    reads = gateway.database.reads
    days = period.days
    first = days.midnights[0] // BUCKET_SECONDS
    stride = max(days.seconds // BUCKET_SECONDS, 1)
    params = {
        "account_id": period.account_id,
        "from": first,
        "to": days.midnights[-1] // BUCKET_SECONDS,
        "stride": stride,
    }
    by_stretch, links = await asyncio.gather(
        reads.all(CLICKS_BY_STRETCH, _row, **params), reads.scalar(CLICKED_LINKS, **params)
    )
    by_day = [
        (days.day_of_instant(_instant(first + stretch * stride)), n) for stretch, n in by_stretch
    ]
    series = period.series(by_day, ("clicks",), days)
    return ReportData(
        summary={"clicks": sum(point["clicks"] for point in series), "links": int(links or 0)},
        series=series,
    )


CLICKS = Report(
    "link.clicks",
    "Clicks",
    "Clicks on all of the account's short links (bots and HEAD requests left out), and "
    "how many links were clicked.",
    clicks,
    summary=(
        Column("clicks", "count"),
        Column("links", "count", "Links clicked"),
    ),
    series=(Column("clicks", "count"),),
)
