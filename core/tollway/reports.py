"""Reports: what a product registers for the analytics product to serve and export.

A product registers each report with :func:`tollway.hookspecs.tollway_register_reports`:
an id ``<product>.<report_name>``, a name and description, its columns, and a function
computing its summary and series for a :class:`Period` (an account, a range of days
in a time zone, a granularity). The analytics plugin owns no product data: it lists
the reports of the products an account subscribes to, checks the range, calls the
function and renders the answer as JSON, CSV or PDF. A third-party product's reports
appear beside the built-in ones without any change to analytics.

The kit for writing the function, shared by every product:

* :class:`Period` and :class:`Days`: the range's days in the caller's zone, the UTC
  instants they start at, and the buckets (days, ISO weeks from Monday, months) of the
  series, every one present;
* :class:`local_day` and :class:`utc_instant`: SQL that groups rows by the caller's
  day. PostgreSQL converts each timestamp itself (``AT TIME ZONE``); SQLite has no time
  zone data, so it sums per UTC bucket counted from the range's first midnight, the
  longest that every later midnight is a whole number of away, and :meth:`Days.day_of`
  places each bucket in its day (exact across clock changes, in every zone);
* :meth:`Period.series`: the rows of a grouped statement summed into the buckets.

Money is counted in minor units (cents) everywhere a report computes; a column of kind
``money`` is shown in major units in JSON (``12.5``) and in both forms in CSV, with
the currency's own number of decimals (:mod:`tollway.billing.money`).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any, Literal
from zoneinfo import ZoneInfo

from sqlalchemy import BindParameter, ColumnElement, Integer, String, and_, bindparam
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from tollway.billing.money import decimals, major

if TYPE_CHECKING:
    from tollway.gateway import Gateway

Granularity = Literal["day", "week", "month"]
GRANULARITIES: tuple[Granularity, ...] = ("day", "week", "month")
ColumnKind = Literal["count", "money", "number", "seconds"]
"""``count``: an integer; ``money``: an integer of minor units (cents), shown in major
units in JSON and in both forms in CSV; ``number``: any number; ``seconds``: a
duration, a number or ``null`` when there is nothing to measure."""

_REPORT_ID = re.compile(r"^[a-z][a-z0-9_-]*\.[a-z][a-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class Column:
    """A field of a report's summary or of each item of its series."""

    name: str
    kind: ColumnKind
    label: str = ""
    """The column's heading in exports; its name when empty."""

    @property
    def heading(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()


@dataclass(frozen=True, slots=True)
class ReportData:
    """What a report's function computes: money in minor units, as its columns say."""

    summary: dict[str, Any]
    """One value per summary column."""
    series: list[dict[str, Any]]
    """One item per bucket of the period, oldest first: ``date`` (the bucket's first
    day, a :class:`~datetime.date`) and one value per series column."""
    currency: str | None = None
    """ISO 4217 code of the money columns; ``None`` when the report has none."""


ReportFunction = Callable[["Gateway", "Period"], Awaitable[ReportData]]


@dataclass(frozen=True, slots=True)
class Report:
    """A report a product serves through the analytics product."""

    id: str
    """``<product>.<report_name>``, e.g. ``pos.sales_summary``."""
    name: str
    description: str
    compute: ReportFunction
    summary: tuple[Column, ...]
    series: tuple[Column, ...]
    """The series' columns besides ``date``."""
    supports_date_range: bool = True
    """``False``: the report ignores the range (a snapshot); it is still bucketed."""
    supports_export: bool = True

    @property
    def product(self) -> str:
        return self.id.partition(".")[0]

    def check(self) -> str | None:
        """Why the report cannot be registered, or ``None``."""
        if not _REPORT_ID.match(self.id):
            return f"invalid report id {self.id!r} (expected <product>.<report_name>)"
        names = [column.name for column in self.series]
        if "date" in names or len(set(names)) != len(names):
            return f"report {self.id!r}: series columns must be unique and not 'date'"
        if len({column.name for column in self.summary}) != len(self.summary):
            return f"report {self.id!r}: summary columns must be unique"
        return None


# Days in a zone -------------------------------------------------------------------------


class Days:
    """The days ``first`` to ``last`` (included) in ``zone``: the UTC instants they
    start at, and the statements' parameters for them."""

    def __init__(self, first: date, last: date, zone: ZoneInfo) -> None:
        self.first = first
        self.last = last
        self.zone = zone
        # A midnight that clocks skip starts its day where the gap ends (zoneinfo's
        # reading of a time in a gap).
        self.midnights = [
            int(datetime.combine(first + timedelta(days=n), time(), zone).timestamp())
            for n in range((last - first).days + 2)
        ]
        self.seconds = math.gcd(*(midnight - self.midnights[0] for midnight in self.midnights))
        """SQLite's bucket: the longest stretch of seconds that every midnight is a whole
        number of after the first (the length of a day where clocks never change)."""

    def params(self, account_id: int) -> dict[str, Any]:
        """What statements using :class:`local_day` and :class:`utc_instant` take:
        ``account_id``, ``start`` and ``end`` (epoch seconds of the first midnight and
        of the midnight after the last day), ``zone`` (its IANA name) and ``seconds``."""
        return {
            "account_id": account_id,
            "start": self.midnights[0],
            "end": self.midnights[-1],
            "zone": self.zone.key,
            "seconds": self.seconds,
        }

    @property
    def start(self) -> datetime:
        """The instant the first day starts (UTC)."""
        return datetime.fromtimestamp(self.midnights[0], ZoneInfo("UTC"))

    @property
    def end(self) -> datetime:
        """The instant the last day ends (UTC), excluded."""
        return datetime.fromtimestamp(self.midnights[-1], ZoneInfo("UTC"))

    def day_of(self, key: date | int) -> date:
        """The day of a :class:`local_day` value: PostgreSQL's is a date already, clamped
        to the range (its zone data may differ from Python's, which drew the range's
        bounds); SQLite's bucket number is looked up among the midnights."""
        if isinstance(key, date):
            return min(max(key, self.first), self.last)
        after = bisect_right(self.midnights, self.midnights[0] + key * self.seconds)
        return self.first + timedelta(days=min(max(after - 1, 0), len(self.midnights) - 2))

    def day_of_instant(self, instant: datetime) -> date:
        """The day (in the zone) of an aware ``instant`` inside the range."""
        return self.day_of(instant.astimezone(self.zone).date())


def first_day(day: date, granularity: Granularity) -> date:
    """The first day of ``day``'s bucket: itself, its ISO week's Monday or its month's 1st."""
    if granularity == "week":
        return day - timedelta(days=day.weekday())
    if granularity == "month":
        return day.replace(day=1)
    return day


@dataclass(frozen=True, slots=True)
class Period:
    """What a report is computed for: an account's days ``start`` to ``end`` (included)
    in ``zone``, in buckets of ``granularity``."""

    account_id: int
    start: date
    end: date
    granularity: Granularity
    zone: ZoneInfo

    @property
    def days(self) -> Days:
        return Days(self.start, self.end, self.zone)

    def buckets(self) -> list[date]:
        """The first day of every bucket, oldest first. A week's or month's bucket is
        dated its first day, even before ``start``; it counts the period's days only."""
        seen: dict[date, None] = {}
        for n in range((self.end - self.start).days + 1):
            seen[first_day(self.start + timedelta(days=n), self.granularity)] = None
        return list(seen)

    def bucket(self, day: date) -> date:
        return first_day(day, self.granularity)

    def series(
        self, rows: Iterable[Sequence[Any]], names: Sequence[str], days: Days | None = None
    ) -> list[dict[str, Any]]:
        """Sum ``rows`` of ``(local_day key, value, ...)`` into every bucket, zeros where
        none fell: one item ``{"date": first day, name: sum, ...}`` per bucket."""
        days = days or self.days
        sums = {bucket: [0] * len(names) for bucket in self.buckets()}
        for key, *values in rows:
            point = sums[self.bucket(days.day_of(key))]
            for index, value in enumerate(values):
                point[index] += value or 0
        return [
            {"date": bucket, **dict(zip(names, values, strict=True))}
            for bucket, values in sums.items()
        ]


# SQL -----------------------------------------------------------------------------------


class utc_instant(FunctionElement[Any]):
    """``utc_instant(seconds)``: the instant ``seconds`` after 1970-01-01 UTC, compared
    with a :class:`~tollway.UTCDateTime` column as instants are. (SQLite's is UTC text
    without fractions of a second, which sorts before a stored time of that second.)"""

    inherit_cache = True


@compiles(utc_instant)
def _sqlite_instant(element: utc_instant, compiler: Any, **kw: Any) -> str:
    return f"datetime({compiler.process(element.clauses, **kw)}, 'unixepoch')"


@compiles(utc_instant, "postgresql")
def _postgresql_instant(element: utc_instant, compiler: Any, **kw: Any) -> str:
    return f"to_timestamp({compiler.process(element.clauses, **kw)})"


class local_day(FunctionElement[Any]):
    """The caller's day of a timestamp, as each database can tell it.

    ``local_day(column, zone, start, seconds)`` (the parameters of
    :meth:`Days.params`): on PostgreSQL the date in ``zone`` (an IANA name); on SQLite
    the UTC bucket of ``seconds`` it falls in, counted from ``start`` (epoch seconds),
    for :meth:`Days.day_of` to place."""

    inherit_cache = True


@compiles(local_day)
def _utc_bucket(element: local_day, compiler: Any, **kw: Any) -> str:
    created, _, start, seconds = element.clauses
    epoch = f"CAST(strftime('%s', {compiler.process(created, **kw)}) AS INTEGER)"
    return f"({epoch} - {compiler.process(start, **kw)}) / {compiler.process(seconds, **kw)}"


@compiles(local_day, "postgresql")
def _local_date(element: local_day, compiler: Any, **kw: Any) -> str:
    created, zone, _, _ = element.clauses
    local = f"{compiler.process(created, **kw)} AT TIME ZONE {compiler.process(zone, **kw)}"
    return f"CAST({local} AS DATE)"


# The statements' parameters ---------------------------------------------------------

# The account and the range are written into the SQL as numbers, as a page's offset and
# limit are (tollway.PAGE_LIMIT): as parameters they would hide from PostgreSQL's
# planner how many rows the account has in the range, and after five runs of a prepared
# statement it keeps a generic plan (the point of sale's year of 100,000 orders took
# twice as long with one). Each account and range is a statement of its own.
ACCOUNT: BindParameter[int] = bindparam("account_id", type_=Integer, literal_execute=True)
START: BindParameter[int] = bindparam("start", type_=Integer, literal_execute=True)
"""The instant the period's first day starts, in epoch seconds."""
END: BindParameter[int] = bindparam("end", type_=Integer, literal_execute=True)
"""The instant its last day ends."""
SECONDS: BindParameter[int] = bindparam("seconds", type_=Integer, literal_execute=True)
"""SQLite's bucket (see :class:`Days`)."""
ZONE: BindParameter[str] = bindparam("zone", type_=String)


def day_of(column: Any) -> local_day:
    """``column``'s day in the caller's zone, for :meth:`Period.series` to place: the
    parameters are :meth:`Days.params`'."""
    return local_day(column, ZONE, START, SECONDS)


def in_period(account: Any, moment: Any) -> ColumnElement[bool]:
    """A row of the period's account (its ``account`` column) whose ``moment`` (a
    :class:`~tollway.UTCDateTime` column) is within the period's days."""
    return and_(account == ACCOUNT, moment >= utc_instant(START), moment < utc_instant(END))


def _row(*columns: Any) -> tuple[Any, ...]:
    return columns


async def summed_by_day(
    gateway: Gateway, period: Period, statement: Any, columns: Sequence[Column]
) -> ReportData:
    """The report of a statement selecting ``(day_of(...), sum, ...)`` grouped by day,
    one sum per column: the sums in every bucket, and their totals as the summary."""
    days = period.days
    rows = await gateway.database.reads.all(statement, _row, **days.params(period.account_id))
    names = [column.name for column in columns]
    series = period.series(rows, names, days)
    summary = {name: sum(item[name] for item in series) for name in names}
    return ReportData(summary=summary, series=series)


# Money ---------------------------------------------------------------------------------


def decimal_text(amount_cents: int, currency: str | None) -> str:
    """Minor units as exact decimal text in major units: 1234 USD -> ``12.34``,
    -5 -> ``-0.05``, 1234 JPY -> ``1234``, 1234 KWD -> ``1.234``."""
    digits = decimals(currency or "usd")
    units, minor = divmod(abs(amount_cents), 10**digits)
    sign = "-" if amount_cents < 0 else ""
    return f"{sign}{units}.{minor:0{digits}d}" if digits else f"{sign}{units}"


def shown(
    columns: Sequence[Column], values: dict[str, Any], currency: str | None
) -> dict[str, Any]:
    """``values`` as JSON shows them: money in major units (``major``), the rest as
    computed, dates as ``YYYY-MM-DD``."""
    out = dict(values)
    for column in columns:
        value = out.get(column.name)
        if column.kind == "money" and value is not None:
            out[column.name] = major(int(value), currency or "usd")
    day = out.get("date")
    if isinstance(day, date):
        out["date"] = day.isoformat()
    return out


__all__ = [
    "ACCOUNT",
    "END",
    "GRANULARITIES",
    "SECONDS",
    "START",
    "ZONE",
    "Column",
    "ColumnKind",
    "Days",
    "Granularity",
    "Period",
    "Report",
    "ReportData",
    "ReportFunction",
    "day_of",
    "decimal_text",
    "first_day",
    "in_period",
    "local_day",
    "shown",
    "summed_by_day",
    "utc_instant",
]
