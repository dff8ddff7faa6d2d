"""Analytics: the reports the analytics product serves, over a year of point of sale
orders and a million short link clicks, through its HTTP API in process.

On a throwaway PostgreSQL database (``TOLLWAY_TEST_POSTGRES_URL``), one account
subscribed to analytics (``enterprise``: ranges up to three years), pos and link gets:

* ``--orders`` (100,000) orders of about 3 lines over the previous calendar year, in
  New York's business hours, some cancelled, beside ``--other-orders`` (20,000) of ten
  other stores, copied in bulk (``bench/pos_store.py``'s year, as ``bench/pos.py``
  makes it);
* ``--clicks`` (1,000,000) clicks on one link over the last 90 days, one in 50 a
  bot's, written through the link product's own storage with its 15-minute traffic
  pre-aggregates, which ``link.clicks`` reads (``bench/links.py``'s analytics seeding).

No server and no network: requests go through ``httpx.ASGITransport`` into the
gateway's app with its lifespan run (the in-memory rate limiter), one after another,
with a key holding ``analytics:reports:read`` and ``analytics:reports:export``:

* ``GET /v1/analytics/reports/pos.sales_summary`` over 366 days (the whole year) by
  day, week and month, in UTC and America/New_York;
* ``GET /v1/analytics/reports/link.clicks`` over the last 30 and 90 days by day, in UTC
  and Asia/Kolkata (a +05:30 zone);
* ``POST /v1/analytics/reports/export`` of the 366 days of sales by day (UTC) as CSV
  and as PDF: 366 rows, under ``inline_export_max_rows`` (400), so made in the request.

Each request gets one warm-up, then ``--requests`` (20; ``--exports``, 5, for the
exports) sequential calls; every answer is checked against what was seeded (orders and
revenue, clicks counted from the raw clicks in the range, one row per bucket; an
export's download read back once). Median, p95 and max in ms, and beside them the
median of the report's function alone (``Report.compute``; for exports with its
rendering), called as many times. Target (the issue's): every report's p95 under
300 ms. Targets print as PASS/MISS; the exit status is 0 whatever the verdict, 1 only
if the run is invalid. Run with ``python bench/analytics.py`` (``--help`` for the
options); the report goes to stdout and bench/results/analytics.md.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from importlib.metadata import version
from typing import Any
from zoneinfo import ZoneInfo

import httpx
from common import (
    BenchError,
    Run,
    add_output,
    argument_parser,
    at_least_one,
    log,
    postgres_database,
    postgres_version,
    publish,
    quantile,
)
from links import Backend as LinkBackend
from links import seed_clicks
from pos_store import OTHER_STORES, Year, seed_catalog, seed_year, vacuum
from sqlalchemy import false, func, select

from tollway import Gateway, Period, load_settings
from tollway.testing import gateway_client
from tollway_analytics.exports import csv_bytes, pdf_bytes
from tollway_analytics.product import REPORTS_EXPORT, REPORTS_READ
from tollway_link.models import Click, Link, Traffic
from tollway_pos.models import Order, OrderLine

PLANS = {"analytics": "enterprise", "pos": "business", "link": "business"}
SCOPES = [REPORTS_READ, REPORTS_EXPORT]
PRODUCTS = 200
"""The store's catalog, as ``bench/pos.py`` seeds it."""
REPORTS = "/v1/analytics/reports"
SALES = "pos.sales_summary"
CLICKS = "link.clicks"
YEAR_DAYS = 366
SALES_ZONES = ("UTC", "America/New_York")
CLICK_ZONES = ("UTC", "Asia/Kolkata")
CLICK_DAYS = (30, 90)
EXPORT_ZONE = "UTC"
TARGET_MS = 300.0


@dataclass
class Case:
    """A request timed: a report's data (``GET``) or, with ``format``, its export."""

    report_id: str
    period: Period
    expected: dict[str, Any]
    """The summary's values the answer must show."""
    format: str | None = None
    http: list[float] = field(default_factory=list)
    compute: list[float] = field(default_factory=list)

    @property
    def name(self) -> str:
        period = self.period
        days = (period.end - period.start).days + 1
        what = f"{self.report_id}, {days} days by {period.granularity}, {period.zone.key}"
        return f"{self.format.upper()} export of {what}" if self.format else what

    @property
    def query(self) -> dict[str, str]:
        period = self.period
        return {
            "start_date": period.start.isoformat(),
            "end_date": period.end.isoformat(),
            "granularity": period.granularity,
            "tz": period.zone.key,
        }

    @property
    def request(self) -> str:
        if self.format:
            return f"POST {REPORTS}/export"
        query = "&".join(f"{name}={value}" for name, value in self.query.items())
        return f"GET {REPORTS}/{self.report_id}?{query}"


@dataclass
class Seeded:
    account_id: int
    key: str
    year: Year
    pos_seconds: float
    clicks_seconds: float
    counts: dict[str, int] = field(default_factory=dict)
    """Rows in the database, by what they are (counted with SQL after seeding)."""


@dataclass
class Measured:
    seeded: Seeded
    cases: list[Case]
    server_version: str


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("analytics.py", __doc__)
    parser.add_argument(
        "--orders", type=int, default=100_000, help="the store's orders of the year (100,000)"
    )
    parser.add_argument(
        "--other-orders", type=int, default=20_000, help="ten other stores' orders (20,000)"
    )
    parser.add_argument(
        "--clicks", type=int, default=1_000_000, help="clicks on the account's link (1,000,000)"
    )
    parser.add_argument("--requests", type=int, default=20, help="calls per report query (20)")
    parser.add_argument("--exports", type=int, default=5, help="calls per export (5)")
    add_output(parser, "analytics")
    args = parser.parse_args(argv)
    at_least_one(parser, args, "orders", "clicks", "requests", "exports")
    if args.other_orders < 0:
        parser.error("--other-orders must not be negative")
    return args


# --- seeding -------------------------------------------------------------------------


def gateway_for(database_url: str) -> Gateway:
    settings = load_settings(
        environ={},
        database_url=database_url,
        plugins=["analytics", "pos", "link"],
        demo=False,
        auto_migrate=False,
    )
    return Gateway(settings)


async def seed(gateway: Gateway, database_url: str, args: argparse.Namespace) -> Seeded:
    """The account, its key, its store's year of orders and its link's clicks."""
    await gateway.migrate()
    account = await gateway.accounts.create_account("bench", PLANS)
    created = await gateway.accounts.create_key(account, name="bench", scopes=SCOPES)
    clock = time.monotonic()
    log(f"seeding {args.orders:,} orders of a year (+ {args.other_orders:,} of other stores)")
    async with gateway.database.transaction() as session:
        await seed_catalog(session, account, PRODUCTS)
    year = await seed_year(gateway, account, PRODUCTS, args.orders, args.other_orders)
    pos_seconds = time.monotonic() - clock
    log(f"  {year.lines:,} lines, {pos_seconds:.1f} s; seeding {args.clicks:,} clicks")
    clock = time.monotonic()
    owner = LinkBackend("PostgreSQL", "memory", database_url=database_url, account_id=account)
    await seed_clicks(owner, args.clicks)
    clicks_seconds = time.monotonic() - clock
    log(f"  {clicks_seconds:.1f} s")
    await vacuum(gateway.database)
    seeded = Seeded(account, created.key, year, pos_seconds, clicks_seconds)
    seeded.counts = await counts(gateway, account)
    return seeded


async def counts(gateway: Gateway, account: int) -> dict[str, int]:
    """What the database holds, in one snapshot."""
    links = select(Link.id).where(Link.account_id == account)
    statements = {
        "the store's orders": select(func.count()).where(Order.account_id == account),
        "their lines": select(func.count()).where(OrderLine.account_id == account),
        "other stores' orders": select(func.count()).where(Order.account_id != account),
        "the account's links": select(func.count()).where(Link.account_id == account),
        "clicks on them": select(func.count()).where(Click.account_id == account),
        "of which bots'": select(func.count()).where(Click.account_id == account, Click.bot),
        "15-minute traffic rows of them": select(func.count()).where(Traffic.link_id.in_(links)),
    }
    query = select(*(statement.scalar_subquery() for statement in statements.values()))
    async with gateway.database.transaction() as session:
        found = (await session.execute(query)).one()
    return {name: int(value) for name, value in zip(statements, found, strict=True)}


async def people_clicks(gateway: Gateway, period: Period) -> int:
    """The account's clicks in ``period`` that ``link.clicks`` counts (bots' left out),
    from the raw clicks."""
    days = period.days
    statement = select(func.count()).where(
        Click.account_id == period.account_id,
        Click.bot == false(),
        Click.clicked_at >= days.start,
        Click.clicked_at < days.end,
    )
    async with gateway.database.transaction() as session:
        return int(await session.scalar(statement) or 0)


async def make_cases(gateway: Gateway, seeded: Seeded) -> list[Case]:
    account, year = seeded.account_id, seeded.year
    first = date(year.year, 1, 1)
    last = first + timedelta(days=YEAR_DAYS - 1)
    sales = {"total_orders": year.kept, "total_revenue": year.revenue / 100}
    cases = [
        Case(SALES, Period(account, first, last, granularity, ZoneInfo(zone)), sales)
        for zone in SALES_ZONES
        for granularity in ("day", "week", "month")
    ]
    for zone in CLICK_ZONES:
        today = datetime.now(ZoneInfo(zone)).date()
        for days in CLICK_DAYS:
            period = Period(account, today - timedelta(days=days - 1), today, "day", ZoneInfo(zone))
            clicked = {"clicks": await people_clicks(gateway, period), "links": 1}
            cases.append(Case(CLICKS, period, clicked))
    whole_year = Period(account, first, last, "day", ZoneInfo(EXPORT_ZONE))
    cases += [Case(SALES, whole_year, {}, "csv"), Case(SALES, whole_year, {}, "pdf")]
    return cases


# --- measuring -----------------------------------------------------------------------


async def timed(call: Callable[[], Awaitable[Any]], times: int) -> tuple[list[float], Any]:
    """The milliseconds of ``times`` sequential calls after one warm-up, and the last
    call's result."""
    result = await call()
    taken = []
    for _ in range(times):
        started = time.perf_counter()
        result = await call()
        taken.append((time.perf_counter() - started) * 1000)
    return taken, result


def checked(case: Case, response: httpx.Response) -> dict[str, Any]:
    """The answer's body; :class:`BenchError` unless it says what was seeded."""
    if response.status_code != 200:
        raise BenchError(f"{case.request}: {response.status_code} {response.text[:300]}")
    body: dict[str, Any] = response.json()
    if case.format:
        if body["status"] != "ready" or not body["file_size_bytes"]:
            raise BenchError(f"{case.name}: {body}")
        return body
    shown = {name: body["summary"][name] for name in case.expected}
    if shown != case.expected or len(body["series"]) != len(case.period.buckets()):
        raise BenchError(
            f"{case.name}: {shown} in {len(body['series'])} rows; seeded {case.expected} "
            f"in {len(case.period.buckets())}"
        )
    return body


async def check_download(client: httpx.AsyncClient, case: Case, export: dict[str, Any]) -> None:
    """The export's file, read back once: a CSV row per bucket, or a PDF."""
    response = await client.get(export["download_url"])
    content = response.content
    if response.status_code != 200 or len(content) != export["file_size_bytes"]:
        raise BenchError(f"{case.name}: the download answered {response.status_code}")
    rows, lines = len(case.period.buckets()), content.count(b"\r\n")
    if case.format == "csv" and lines != rows + 1:
        raise BenchError(f"{case.name}: {lines} CSV lines for {rows} rows")
    if case.format == "pdf" and not content.startswith(b"%PDF-"):
        raise BenchError(f"{case.name}: the download is not a PDF")


async def measure_case(
    gateway: Gateway, client: httpx.AsyncClient, case: Case, times: int, key: str
) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    report = gateway.registry.reports[case.report_id]

    async def ask() -> dict[str, Any]:
        if case.format:
            body = {"report_id": case.report_id, "format": case.format, **case.query}
            response = await client.post(f"{REPORTS}/export", json=body, headers=headers)
        else:
            response = await client.get(
                f"{REPORTS}/{case.report_id}", params=case.query, headers=headers
            )
        return checked(case, response)

    async def compute() -> Any:
        data = await report.compute(gateway, case.period)
        if case.format:
            render = csv_bytes if case.format == "csv" else pdf_bytes
            return render(report, data, case.period)
        return data

    case.http, answer = await timed(ask, times)
    if case.format:
        await check_download(client, case, answer)
    case.compute, _ = await timed(compute, times)
    log(
        f"  {case.name}: median {statistics.median(case.http):.1f} ms, "
        f"p95 {quantile(case.http, 95):.1f} ms; compute {statistics.median(case.compute):.1f} ms"
    )


async def measure(database_url: str, args: argparse.Namespace) -> Measured:
    gateway = gateway_for(database_url)
    try:
        seeded = await seed(gateway, database_url, args)
        cases = await make_cases(gateway, seeded)
        log(f"measuring {len(cases)} requests in process")
        async with gateway_client(gateway) as client:
            for case in cases:
                times = args.exports if case.format else args.requests
                await measure_case(gateway, client, case, times, seeded.key)
    finally:
        await gateway.database.dispose()
    return Measured(seeded, cases, await postgres_version(database_url))


# --- reporting -----------------------------------------------------------------------


def verdict(passed: bool) -> str:
    return "**PASS**" if passed else "**MISS**"


def report(measured: Measured, args: argparse.Namespace, run: Run, command: str) -> str:
    seeded, year = measured.seeded, measured.seeded.year
    lines = [
        "# Analytics",
        "",
        run.headline(command) + ".",
        "",
        run.machine(),
        f"- Python {platform.python_version()}, litestar {version('litestar')}, "
        f"SQLAlchemy {version('sqlalchemy')}, asyncpg {version('asyncpg')}, httpx "
        f"{version('httpx')}; PostgreSQL {measured.server_version} on the same machine",
        "- requests in process (`httpx.ASGITransport` into the gateway's app, its lifespan "
        "run; the in-memory rate limiter), one warm-up then "
        f"{args.requests} sequential calls per report query, {args.exports} per export; "
        "every answer checked against the seeded data; whole run "
        f"{run.elapsed:.0f} s",
        f"- data: one account on analytics `{PLANS['analytics']}`, pos and link "
        f"`{PLANS['pos']}`: its store's {args.orders:,} orders of {year.year} (New York "
        f"business hours, {args.orders - year.kept:,} cancelled) beside "
        f"{args.other_orders // OTHER_STORES * OTHER_STORES:,} of {OTHER_STORES} other "
        f"stores, copied in {seeded.pos_seconds:.1f} s; {args.clicks:,} clicks on one "
        f"link over the last 90 days (every 50th a bot's), stored with their "
        f"pre-aggregates in {seeded.clicks_seconds:.1f} s; then `VACUUM ANALYZE`",
        "",
        "| rows (counted with SQL) | count |",
        "|---|---:|",
        *(f"| {name} | {count:,} |" for name, count in seeded.counts.items()),
        "",
        "| report | request | median (ms) | p95 (ms) | max (ms) | compute alone, median (ms) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for case in measured.cases:
        lines.append(
            f"| {case.name} | `{case.request}` | {statistics.median(case.http):.1f} "
            f"| {quantile(case.http, 95):.1f} | {max(case.http):.1f} "
            f"| {statistics.median(case.compute):.1f} |"
        )
    lines += [
        "",
        "Compute alone: `Report.compute(gateway, Period(...))` for the same period, called "
        "as often after one warm-up; for an export, with its CSV or PDF rendering.",
        "",
        f"Targets (every report's p95 under {TARGET_MS:.0f} ms):",
        "",
    ]
    for case in measured.cases:
        if not case.format:
            p95 = quantile(case.http, 95)
            lines.append(f"- {case.name}: {verdict(p95 < TARGET_MS)} (p95 {p95:.1f} ms)")
    lines += ["", "Commands:", "", f"- `{command}`", "- `nox -s bench` (every benchmark)"]
    return "\n".join(lines) + "\n"


# --- main ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = shlex.join(
        ["python", "bench/analytics.py", *(sys.argv[1:] if argv is None else argv)]
    )
    run = Run.begin()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    try:
        with postgres_database() as database_url:
            measured = asyncio.run(measure(database_url, args))
    except BenchError as error:
        log(f"invalid run: {error}")
        return 1
    publish(report(measured, args, run, command), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
