"""``GET /v1/link/analytics/{id}``: a link's clicks over a period, in the caller's days.

A period of N days is the caller's today and the N-1 days before it, in ``tz``; ``all``
starts on the day (in ``tz``) the link was created. Every number comes from the
pre-aggregates written with the clicks (:mod:`tollway_link.store`), summed by the
database, so the answer reads rows per 15 minutes, per UTC day and per distinct value,
never one row per click:

- ``clicks_by_day``: the 15-minute traffic rows of the period, each turned into its
  local day number by the SQL (one expression per stretch of constant UTC offset,
  :mod:`tollway_link.days`);
- ``top_referrers``, ``top_countries``, ``devices``: the breakdown's UTC-day rows for
  the period's whole UTC days and its 15-minute rows for the two partial ones;
- ``unique`` of a day: its visits whose gap to the visitor's previous visit reaches back
  before the day's first bucket (:class:`~tollway_link.models.VisitGaps`), every day of
  the period in one statement; a day longer than
  :data:`~tollway_link.store.LONGEST_DAY` (none in today's zones) counts them among its
  clicks;
- ``unique_visitors``: the visitors whose latest click is in the period or after,
  less those whose first click is after it.

Ties in the top lists are ordered by value, byte by byte, the same on every database.
"""

from __future__ import annotations

import asyncio
import functools
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from litestar import Request, get
from litestar.di import NamedDependency
from litestar.params import QueryParameter
from sqlalchemy import (
    Boolean,
    ColumnElement,
    Integer,
    and_,
    bindparam,
    case,
    func,
    or_,
    select,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from tollway import CurrentCaller, CurrentGateway, GeoIP, NotFound, Reads, UnprocessableEntity
from tollway_link import schemas
from tollway_link.addresses import Addresses
from tollway_link.bulk import json_rows, json_table
from tollway_link.days import Day, Piece, days, local_date, pieces
from tollway_link.models import Breakdown, Click, Link, Traffic, VisitGaps, VisitorBounds
from tollway_link.product import ANALYTICS_READ
from tollway_link.routes import LinkId
from tollway_link.store import BUCKET_SECONDS, DAY, LONGEST_DAY

PERIOD_DAYS = {"7d": 7, "30d": 30, "90d": 90}
TOP = 10
"""Referrers and countries listed at most."""

PeriodParameter = Annotated[
    schemas.Period,
    QueryParameter(description="Today and the days before it, or every day since the link's."),
]
TimeZone = Annotated[
    str,
    QueryParameter(max_length=64, description="The IANA time zone days are counted in."),
]
IncludeBots = Annotated[
    bool, QueryParameter(description="Count the clicks of bots and HEAD requests too.")
]


class binary_order(FunctionElement[str]):
    """Its argument, compared byte by byte on PostgreSQL (``COLLATE "C"``) as SQLite
    always does: ties in the top lists come out in the same order on both."""

    inherit_cache = True


@compiles(binary_order)
def _binary_order(element: binary_order, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.clauses, **kw))


@compiles(binary_order, "postgresql")
def _binary_order_postgresql(element: binary_order, compiler: Any, **kw: Any) -> str:
    return f'{compiler.process(element.clauses, **kw)} COLLATE "C"'


# Statements, built once --------------------------------------------------------------

LINK = bindparam("link", type_=Integer)
BOTS = bindparam("include_bots", type_=Boolean)
FROM = bindparam("from", type_=Integer)
TO = bindparam("to", type_=Integer)


def _counted(bot: Any) -> ColumnElement[bool]:
    """Clicks of people; bots' and ``HEAD`` requests' too with ``include_bots``."""
    condition: ColumnElement[bool] = bot.in_([False, BOTS])
    return condition


LINK_OF = select(Link.id, Link.code, Link.created_at).where(
    Link.public_id == bindparam("id"), Link.account_id == bindparam("account_id")
)

_offsets = [bindparam(f"offset{n}", type_=Integer) for n in range(3)]
_changes = [bindparam(f"change{n}", type_=Integer) for n in range(1, 3)]
_LOCAL_DAY = case(
    (Traffic.bucket < _changes[0], (Traffic.bucket + _offsets[0]) // DAY),
    (Traffic.bucket < _changes[1], (Traffic.bucket + _offsets[1]) // DAY),
    else_=(Traffic.bucket + _offsets[2]) // DAY,
)
_DAILY = (
    select(_LOCAL_DAY.label("day"), Traffic.clicks)
    .where(Traffic.link_id == LINK, Traffic.bucket >= FROM, Traffic.bucket < TO)
    .where(_counted(Traffic.bot))
    .subquery()
)
CLICKS_BY_DAY = select(_DAILY.c.day, func.sum(_DAILY.c.clicks)).group_by(_DAILY.c.day)
"""Clicks per local day number in buckets ``from`` to ``to``, where the zone is
``offset0`` buckets ahead of UTC until bucket ``change1``, then ``offset1`` until
``change2``, then ``offset2``."""
PIECES_PER_STATEMENT = 3

DAYS_FROM = bindparam("days_from", type_=Integer)
DAYS_TO = bindparam("days_to", type_=Integer)
_IN_PERIOD = or_(
    # Three ranges of the primary key (an OR inside one would scan every 15-minute row).
    and_(Breakdown.buckets == DAY, Breakdown.bucket >= DAYS_FROM, Breakdown.bucket < DAYS_TO),
    and_(Breakdown.buckets == 1, Breakdown.bucket >= FROM, Breakdown.bucket < DAYS_FROM),
    and_(Breakdown.buckets == 1, Breakdown.bucket >= DAYS_TO, Breakdown.bucket < TO),
)
_CLICKS = func.sum(Breakdown.clicks)
_RANKED = (
    select(
        Breakdown.dimension,
        Breakdown.value,
        _CLICKS.label("clicks"),
        func.row_number()
        .over(
            partition_by=Breakdown.dimension,
            order_by=(_CLICKS.desc(), binary_order(Breakdown.value)),
        )
        .label("rank"),
    )
    .where(Breakdown.link_id == LINK, _IN_PERIOD, _counted(Breakdown.bot))
    .group_by(Breakdown.dimension, Breakdown.value)
    .subquery()
)
BREAKDOWN = (
    select(_RANKED.c.dimension, _RANKED.c.value, _RANKED.c.clicks)
    .where(_RANKED.c.rank <= TOP)
    .order_by(_RANKED.c.dimension, _RANKED.c.rank)
)
"""The most clicked referrers, countries and devices of buckets ``from`` to ``to``:
UTC days ``days_from`` to ``days_to`` (first buckets) whole, 15-minute rows around."""


@functools.cache
def day_visitors(dialect: str) -> Any:
    """The visitors of each day of the JSON parameter ``days`` (rows ``[start, end]``,
    in buckets): the day's visits whose gap reaches back before its start (``None``
    for a day without visits).

    A subquery per day, so that each day is one primary-key range whatever the
    planner believes of the link. As a join of the days with the gaps, one PostgreSQL
    run of bench/links.py took 1.2 s at a million clicks where EXPLAIN ANALYZE of the
    same join took 43 ms; the slow plan did not reproduce outside the bench, so its
    cause (most likely a generic plan made for the table's links of few rows) is a
    guess. This form leaves the planner no other way."""
    days = json_table("days", {"start": "integer", "end": "integer"}, dialect)
    gaps = VisitGaps
    visitors = (
        select(func.sum(gaps.visitors))
        .where(
            gaps.link_id == LINK,
            gaps.include_bots == BOTS,
            gaps.bucket >= days.c.start,
            gaps.bucket < days.c.end,
            gaps.gap > gaps.bucket - days.c.start,
        )
        .scalar_subquery()
    )
    return select(days.c.start, visitors)


VISITORS_BETWEEN = select(func.count(func.distinct(Click.visitor))).where(
    Click.link_id == LINK,
    Click.clicked_at >= bindparam("since"),
    Click.clicked_at < bindparam("until"),
    _counted(Click.bot),
)
"""The visitors of a day longer than the visit gaps count, from its clicks."""
_BOUND = case(
    (VisitorBounds.bound == "last", VisitorBounds.visitors),
    (VisitorBounds.bucket >= TO, -VisitorBounds.visitors),
    else_=0,
)
PERIOD_VISITORS = select(func.coalesce(func.sum(_BOUND), 0)).where(
    VisitorBounds.link_id == LINK,
    VisitorBounds.include_bots == BOTS,
    VisitorBounds.bucket >= FROM,
)
"""The visitors of buckets ``from`` to ``to``: those whose latest click is at
``from`` or later, less those whose first is at ``to`` or later."""


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; 422 for one ``zoneinfo`` does not know."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UnprocessableEntity(f"Unknown time zone {name!r}: tz must be an IANA zone") from None


def _moment(bucket: int) -> datetime:
    return datetime.fromtimestamp(bucket * BUCKET_SECONDS, UTC)


class Analytics:
    """One account's click analytics, read without a transaction."""

    def __init__(self, reads: Reads, account_id: int, base: str, geoip: GeoIP) -> None:
        self.reads = reads
        self.account_id = account_id
        self.base = base
        self.geoip = geoip

    async def of(
        self, link_id: str, period: schemas.Period, tz: ZoneInfo, include_bots: bool, now: datetime
    ) -> schemas.ClickAnalytics:
        found = await self.reads.first(
            LINK_OF, lambda *row: row, id=link_id, account_id=self.account_id
        )
        if found is None:
            raise NotFound(f"Link {link_id} not found")
        key, code, created_at = found
        today = now.astimezone(tz).date()
        first = (
            created_at.astimezone(tz).date()
            if period == "all"
            else today - timedelta(days=PERIOD_DAYS[period] - 1)
        )
        span = days(tz, min(first, today), today)
        counting = {"link": key, "include_bots": include_bots}
        start, end = span[0].start, span[-1].end
        # Independent statements, each on a connection of its own, at once.
        clicks, unique, visitors, top = await asyncio.gather(
            self._clicks_by_day(counting, span, pieces(tz, span)),
            self._visitors_by_day(counting, span),
            self.reads.scalar(PERIOD_VISITORS, **counting, **{"from": start, "to": end}),
            self._breakdown(counting, start, end),
        )
        devices = dict(top.get("device", []))
        return schemas.ClickAnalytics(
            link_id=link_id,
            short_url=f"{self.base}/{code}",
            period=period,
            total_clicks=sum(clicks.values()),
            unique_visitors=int(visitors),
            clicks_by_day=[
                schemas.DayClicks(day.date.isoformat(), clicks.get(day.date, 0), unique.get(day, 0))
                for day in reversed(span)
            ],
            top_referrers=[
                schemas.ReferrerClicks(value, n) for value, n in top.get("referrer", [])
            ],
            top_countries=[
                schemas.CountryClicks(value, self.geoip.country_name(value), n)
                for value, n in top.get("country", [])
            ],
            devices=schemas.Devices(
                devices.get("mobile", 0), devices.get("desktop", 0), devices.get("tablet", 0)
            ),
        )

    async def _clicks_by_day(
        self, counting: dict[str, Any], span: list[Day], found: list[Piece]
    ) -> dict[date, int]:
        """Clicks per day, a statement per three stretches of constant offset (a 90-day
        period has one to three)."""
        end = span[-1].end
        clicks: dict[date, int] = {}
        for n in range(0, len(found), PIECES_PER_STATEMENT):
            group = found[n : n + PIECES_PER_STATEMENT]
            following = found[n + PIECES_PER_STATEMENT : n + PIECES_PER_STATEMENT + 1]
            offsets = [piece.offset for piece in group]
            offsets += [offsets[-1]] * (PIECES_PER_STATEMENT - len(group))
            changes = [piece.start for piece in group[1:]]
            changes += [end] * (PIECES_PER_STATEMENT - 1 - len(changes))
            rows = await self.reads.all(
                CLICKS_BY_DAY,
                lambda day, n: (local_date(day), int(n)),
                **counting,
                **{"from": group[0].start, "to": following[0].start if following else end},
                **{f"offset{i}": offset for i, offset in enumerate(offsets)},
                **{f"change{i + 1}": change for i, change in enumerate(changes)},
            )
            clicks.update(rows)
        return clicks

    async def _visitors_by_day(self, counting: dict[str, Any], span: list[Day]) -> dict[Day, int]:
        """Distinct visitors per day: from the visit gaps, or for a day longer than the
        gaps count (none in today's zones), from its clicks."""
        unique: dict[Day, int] = {}
        counted = {day.start: day for day in span if day.end - day.start <= LONGEST_DAY}
        for day in span:
            if day.start not in counted:
                since, until = _moment(day.start), _moment(day.end)
                unique[day] = int(
                    await self.reads.scalar(VISITORS_BETWEEN, **counting, since=since, until=until)
                )
        if counted:
            for start, visitors in await self.reads.all(
                day_visitors(self.reads.dialect),
                lambda *row: row,
                **counting,
                days=json_rows([[day.start, day.end] for day in counted.values()]),
            ):
                unique[counted[start]] = int(visitors or 0)
        return unique

    async def _breakdown(
        self, counting: dict[str, Any], start: int, end: int
    ) -> dict[str, list[tuple[str, int]]]:
        """The top values per dimension over buckets ``start`` to ``end``."""
        days_from = -(-start // DAY) * DAY
        days_to = end // DAY * DAY
        if days_from >= days_to:
            days_from = days_to = end
        top: dict[str, list[tuple[str, int]]] = {}
        for dimension, value, clicks in await self.reads.all(
            BREAKDOWN,
            lambda *row: row,
            **counting,
            **{"from": start, "to": end, "days_from": days_from, "days_to": days_to},
        ):
            top.setdefault(dimension, []).append((value, int(clicks)))
        return top


def provide_analytics(
    request: Request[Any, Any, Any],
    reads: NamedDependency[Reads],
    caller: CurrentCaller,
    gateway: CurrentGateway,
    addresses: NamedDependency[Addresses],
) -> Analytics:
    """The caller's account's analytics (the ``analytics`` dependency)."""
    return Analytics(
        reads, caller.principal.account_id, addresses.short_url_base(request.scope), gateway.geoip
    )


@get("/analytics/{link_id:str}", scope=ANALYTICS_READ)
async def link_analytics(
    link_id: LinkId,
    analytics: NamedDependency[Analytics],
    period: PeriodParameter = "30d",
    tz: TimeZone = "UTC",
    include_bots: IncludeBots = False,
) -> schemas.ClickAnalytics:
    """Clicks per day of ``tz`` (newest first, zeros included), visitors, top
    referrers and countries, and devices, over ``period``; bots and ``HEAD`` requests
    only with ``include_bots``."""
    return await analytics.of(link_id, period, zone(tz), include_bots, datetime.now(UTC))


ANALYTICS_ROUTES = [link_analytics]
ANALYTICS_DEPENDENCIES = {"analytics": provide_analytics}
