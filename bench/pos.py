"""Point of sale: listing and searching the catalog and placing orders over HTTP, each
against the trivial-route baseline of the same server; the sales reports over a year
of 100,000 orders.

One granian server (ASGI, 1 worker, ``apps:pos_app``) per backend serves the point of
sale product and the gateway overhead bench's trivial route, ``GET /v1/bench/ping``, on
the same database and rate limiter, as ``bench/chat.py`` runs its profiles:

* ``SQLite``     - a temporary SQLite file and the in-memory rate limiter;
* ``PostgreSQL`` - a temporary database on ``TOLLWAY_TEST_POSTGRES_URL`` and the Redis
  rate limiter and live bus; skipped with a note when either does not answer.

Before the server starts, one store (an account whose key holds every ``pos`` scope)
gets ``--products`` (200) active products in 10 categories, each with a required size
and optional extras, stock tracked and too large (10^9) to run out, names and
descriptions made of a few dozen words. Cases, all at ``--connections`` (32):

* ``baseline``        - ``GET /v1/bench/ping``, the pipeline's trivial route;
* ``list products``   - ``GET /v1/pos/products?limit=50``, the first page by name;
* ``search products`` - ``?search=cheese``, full text (3 products in 16 match);
* ``create order``    - ``POST /v1/pos/orders``, 2 or 3 random products per order with
  a size and maybe an extra, takeaway or dine-in at a table (a wrk Lua script): priced,
  stock taken, numbered and stored in one transaction.

Targets, on PostgreSQL: list products >= 0.10 and create order >= 0.02 of the
baseline's throughput. After the measurements the run checks that the stock taken
equals the units sold. Then, on PostgreSQL (``--orders 0`` skips it), the store gets
``--orders`` (100,000) orders of about 3 lines over the previous calendar year in its
time zone (America/New_York), some cancelled, and ten other stores
``--other-orders`` (20,000) in all, copied in bulk; ``GET /v1/pos/reports/sales`` for
the year by day, week and month and ``GET /v1/pos/reports/daily/{date}`` are timed
sequentially (``--report-requests``, 20, after 2 warm-ups) and checked against the
seeded totals. Target: the year's sales report in under 300 ms (median).
``bench/pos_store.py`` makes the store's data and checks what the database says of it.

Each server gets a warm-up of every case, then the cases are measured in turns (the
order rotates every round) and medians reported. Targets print as PASS/MISS; the exit
status is 0 whatever the verdict, 1 only if the run is invalid. Run with
``python bench/pos.py`` (``--help`` for the options); the report goes to stdout and
bench/results/pos.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import shlex
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import apps
import chat
from common import (
    BenchError,
    Measured,
    Run,
    add_backends,
    add_output,
    add_redis_url,
    argument_parser,
    at_least_one,
    log,
    per_round_table,
    publish,
    quantile,
    rotating,
)
from loadgen import Measurement, run_wrk, run_wrk_script
from pos_store import (
    DAILY,
    DELIVERY_FEE_CENTS,
    EXTRAS,
    ITEMS,
    OTHER_STORES,
    PRODUCT_ID,
    SEARCH_WORD,
    SIZES,
    STOCK,
    TAX_BPS,
    ZONE,
    Year,
    product_id,
    report_queries,
    search_matches,
    seed_catalog,
    seed_year,
    sold,
    time_reports,
    vacuum,
)
from servers import Server, ServerError, running

from tollway import Gateway, load_settings
from tollway_pos.product import SCOPES as POS_SCOPES

TARGET = "apps:pos_app"
POS = "/v1/pos"
PLAN = "business"
LIMIT = 10**9
"""The pos plan's requests/day in the run's config: nothing is refused."""
WARMUP_SECONDS = 3
TARGETS = {"list products": 0.10, "create order": 0.02}
"""Throughput ratios to the baseline the PostgreSQL cases must keep (a floor against
regressions, set from the first quiet run in docs/benchmarks.md): a page is 50 whole
products with their modifier groups, about 33 KB, and every order of one store waits
for the store's order-number row, which stays locked until the order commits."""
REPORT_TARGET_MS = 300.0
SCOPES = [apps.SCOPE, *POS_SCOPES]
PAGE = 50


def _lua_list(names: Sequence[str]) -> str:
    return "{" + ", ".join(f'"{name}"' for name in names) + "}"


ORDER_SCRIPT = f"""\
-- bench/pos.py: an order of 2 or 3 random seeded products, each with a size and maybe
-- an extra, takeaway or dine-in at a table. args: number of products, API key.
local products
local sizes = {_lua_list(list(SIZES))}
local extras = {_lua_list(list(EXTRAS))}
function init(args)
  products = tonumber(args[1])
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. args[2]
end
local function line()
  local modifiers = '{{"group": "Size", "option": "' .. sizes[math.random(#sizes)] .. '"}}'
  if math.random(2) == 1 then
    modifiers = modifiers .. ', {{"group": "Extras", "option": "'
      .. extras[math.random(#extras)] .. '"}}'
  end
  return string.format('{{"product_id": "{PRODUCT_ID}", "qty": %d, "modifiers": [%s]}}',
    math.random(0, products - 1), math.random(2), modifiers)
end
function request()
  local items = {{}}
  for i = 1, math.random(2, 3) do items[i] = line() end
  local kind = '"order_type": "takeaway"'
  if math.random(2) == 1 then
    kind = string.format('"order_type": "dine_in", "table_id": "T%d"', math.random(20))
  end
  local body = '{{' .. kind .. ', "items": [' .. table.concat(items, ", ") .. ']}}'
  return wrk.format(nil, "{POS}/orders", nil, body)
end
"""


@dataclass
class Case(Measured):
    path: str
    post: bool = False


@dataclass
class Backend:
    name: str
    limiter: str
    database_url: str = ""
    redis_prefix: str | None = None
    skipped: str | None = None
    server_version: str = ""
    cases: list[Case] = field(default_factory=list)
    account_id: int = 0
    key: str = ""
    seeded_seconds: float = 0.0
    matches: int = 0
    """Products the search finds."""
    sold: tuple[int, int, int, int] = (0, 0, 0, 0)
    """Orders placed, units on their lines, stock taken, units of the stock movements."""
    year: Year | None = None
    reports: dict[str, list[float]] = field(default_factory=dict)

    @property
    def baseline(self) -> Case:
        return self.cases[0]


def make_cases() -> list[Case]:
    return [
        Case("baseline", apps.PATH),
        Case("list products", f"{POS}/products?limit={PAGE}"),
        Case("search products", f"{POS}/products?search={SEARCH_WORD}"),
        Case("create order", f"{POS}/orders", post=True),
    ]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("pos.py", __doc__)
    parser.add_argument("--duration", type=int, default=8, help="seconds per measurement (8)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    parser.add_argument("--rounds", type=int, default=3, help="measurements per case (3)")
    parser.add_argument("--products", type=int, default=200, help="products seeded (200)")
    parser.add_argument(
        "--orders", type=int, default=100_000, help="the store's orders of the year (100,000)"
    )
    parser.add_argument(
        "--other-orders", type=int, default=20_000, help="ten other stores' orders (20,000)"
    )
    parser.add_argument(
        "--report-requests", type=int, default=20, help="requests per report query (20)"
    )
    add_backends(parser)
    add_redis_url(parser, "Redis of the PostgreSQL profile")
    add_output(parser, "pos")
    args = parser.parse_args(argv)
    at_least_one(parser, args, "duration", "connections", "rounds", "report_requests")
    if args.products < PAGE:
        parser.error(f"--products must be at least {PAGE} (a full first page)")
    if args.orders < 0 or args.other_orders < 0:
        parser.error("--orders and --other-orders must not be negative")
    return args


# --- the store and its catalog --------------------------------------------------------


def gateway_for(database_url: str) -> Gateway:
    settings = load_settings(
        environ={}, database_url=database_url, plugins=[apps.PRODUCT, "pos"], demo=False
    )
    return Gateway(settings, extra_plugins=apps.plugins())


async def prepare(backend: Backend, products: int) -> None:
    """Migrate, create the store, its key and its catalog."""
    clock = time.monotonic()
    gateway = gateway_for(backend.database_url)
    try:
        await gateway.migrate()
        account = await gateway.accounts.create_account(
            "bench", {apps.PRODUCT: apps.PLAN, "pos": PLAN}
        )
        created = await gateway.accounts.create_key(account, name="bench", scopes=SCOPES)
        async with gateway.database.transaction() as session:
            await seed_catalog(session, account, products)
        await vacuum(gateway.database)
    finally:
        await gateway.database.dispose()
    backend.account_id, backend.key = account, created.key
    backend.matches = search_matches(products)
    backend.seeded_seconds = time.monotonic() - clock


async def stock_check(backend: Backend) -> tuple[int, int, int, int]:
    """What the store sold and what its stock lost (:func:`pos_store.sold`)."""
    gateway = gateway_for(backend.database_url)
    try:
        return await sold(gateway.database, backend.account_id)
    finally:
        await gateway.database.dispose()


# --- serving and measuring ------------------------------------------------------------


def write_config(workdir: Path) -> Path:
    path = workdir / "pos.toml"
    path.write_text(
        f"[products.pos.plans.{PLAN}]\nrequests_per_day = {LIMIT}\n"
        f'[products.pos.settings]\ntimezone = "{ZONE}"\ntax_bps = {TAX_BPS}\n'
        f"delivery_fee_cents = {DELIVERY_FEE_CENTS}\n"
    )
    return path


def first_order(server: Server, headers: dict[str, str]) -> None:
    """Place an order like the Lua script's: a refusal stops the run with the product's
    reason (wrk would only count it)."""
    items = [(0, 2, {"Size": "Large", "Extras": "Bacon"}), (1, 1, {"Size": "Small"})]
    body = {
        "order_type": "dine_in",
        "table_id": "T1",
        "items": [
            {
                "product_id": product_id(n),
                "qty": qty,
                "modifiers": [
                    {"group": group, "option": option} for group, option in chosen.items()
                ],
            }
            for n, qty, chosen in items
        ],
    }
    request = urllib.request.Request(
        server.url(f"{POS}/orders"),
        data=json.dumps(body).encode(),
        headers={**headers, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            placed = json.loads(response.read())["order"]
    except urllib.error.HTTPError as error:
        raise ServerError(f"an order answered {error.code}: {error.read()!r}") from None
    if len(placed["items"]) != 2 or placed["total_cents"] <= 0:
        raise BenchError(f"the first order came back as {placed}")


def start_server(
    backend: Backend, workdir: Path, args: argparse.Namespace, headers: dict[str, str]
) -> Server:
    env = {
        "TOLLWAY_DATABASE_URL": backend.database_url,
        "TOLLWAY_PLUGINS": f"{apps.PRODUCT},pos",
        "TOLLWAY_DEMO": "false",
        "TOLLWAY_AUTO_MIGRATE": "false",
        "TOLLWAY_CONFIG": str(write_config(workdir)),
        **chat.limiter_env(backend, args.redis_url),  # type: ignore[arg-type]  # same fields
    }
    server = Server(f"pos-{backend.name.lower()}", TARGET, env, workdir)
    server.start(apps.PATH, headers)
    answered, page = chat.fetch(server, f"{POS}/products?limit={PAGE}", headers)
    if answered.get("x-ratelimit-limit") != str(LIMIT):
        raise ServerError(f"pos limit is {answered.get('x-ratelimit-limit')}: config not read?")
    if page["total"] != args.products or len(page["products"]) != PAGE:
        raise BenchError(f"the first page lists {len(page['products'])} of {page['total']}")
    _, found = chat.fetch(server, f"{POS}/products?search={SEARCH_WORD}", headers)
    if found["total"] != backend.matches:
        raise BenchError(f"the search found {found['total']}, not {backend.matches}")
    first_order(server, headers)
    return server


def run_backend(backend: Backend, args: argparse.Namespace, workdir: Path) -> None:
    log(f"{backend.name}: seeding a store of {args.products} products")
    asyncio.run(prepare(backend, args.products))
    headers = {"Authorization": f"Bearer {backend.key}"}
    script = workdir / "pos-order.lua"
    script.write_text(ORDER_SCRIPT)
    cases = backend.cases = make_cases()
    with running([]) as servers:
        log(f"{backend.name}: starting granian on {TARGET} ({backend.limiter} rate limiter)")
        server = start_server(backend, workdir, args, headers)
        servers.append(server)

        def one(case: Case, seconds: int) -> Measurement:
            if case.post:
                result = run_wrk_script(
                    server.url("/"),
                    str(script),
                    duration=seconds,
                    connections=args.connections,
                    script_args=[str(args.products), backend.key],
                    timeout=chat.REQUEST_TIMEOUT,
                )
            else:
                result = run_wrk(
                    server.url(case.path),
                    duration=seconds,
                    connections=args.connections,
                    headers=headers,
                    timeout=chat.REQUEST_TIMEOUT,
                )
            for _ in range(2):  # answered after what wrk left in flight
                server.probe(apps.PATH, headers)
            return result

        log(f"{backend.name}: warming up, {WARMUP_SECONDS} s per case")
        for case in cases:
            one(case, WARMUP_SECONDS)
        log(f"{backend.name}: measuring, {args.rounds} rounds of {args.duration} s per case")
        for index, case in rotating(cases, args.rounds):
            result = one(case, args.duration)
            case.runs.append(result)
            log(
                f"  round {index + 1}/{args.rounds} {case.name:<15} {result.rps:>8.0f} req/s"
                f"  p50 {result.p50_ms:7.2f} ms  p99 {result.p99_ms:7.2f} ms"
            )
        backend.sold = asyncio.run(stock_check(backend))
        if backend.name == "PostgreSQL" and args.orders:
            run_reports(backend, server, args)


# --- the reports ----------------------------------------------------------------------


def run_reports(backend: Backend, server: Server, args: argparse.Namespace) -> None:
    """A year of orders copied in, then the report queries timed over HTTP."""
    others = args.other_orders // OTHER_STORES * OTHER_STORES
    log(f"{backend.name}: copying {args.orders:,} orders of a year (+ {others:,} others')")
    backend.year = asyncio.run(copy_year(backend, args))
    log(f"{backend.name}: {backend.year.lines:,} lines, copied in {backend.year.seconds:.1f} s")
    headers = {"Authorization": f"Bearer {backend.key}"}
    backend.reports = time_reports(
        lambda path: chat.fetch(server, path, headers)[1], POS, backend.year, args.report_requests
    )


async def copy_year(backend: Backend, args: argparse.Namespace) -> Year:
    """The store's year of orders and the other stores', then a vacuum."""
    gateway = gateway_for(backend.database_url)
    try:
        year = await seed_year(
            gateway, backend.account_id, args.products, args.orders, args.other_orders
        )
        await vacuum(gateway.database)
    finally:
        await gateway.database.dispose()
    return year


# --- reporting ------------------------------------------------------------------------


def verdict(passed: bool) -> str:
    return "**PASS**" if passed else "**MISS**"


def ratio(case: Case, backend: Backend) -> float:
    return case.median("rps") / backend.baseline.median("rps")


def targets(backends: list[Backend]) -> list[str]:
    """The PostgreSQL cases' and reports' PASS/MISS."""
    lines = ["Targets (PostgreSQL + Redis):", ""]
    postgres = [b for b in backends if b.name == "PostgreSQL" and not b.skipped]
    if not postgres:
        return [*lines, "- not measured: PostgreSQL skipped"]
    backend = postgres[0]
    for case in backend.cases:
        if case.name in TARGETS:
            got = ratio(case, backend)
            lines.append(
                f"- {case.name} >= {TARGETS[case.name]:.2f} of the baseline: "
                f"{verdict(got >= TARGETS[case.name])} ({got:.3f})"
            )
    sales = [statistics.median(t) for name, t in backend.reports.items() if name != DAILY]
    if sales:
        lines.append(
            f"- the year's sales report under {REPORT_TARGET_MS:.0f} ms (median): "
            f"{verdict(max(sales) < REPORT_TARGET_MS)} (slowest grouping {max(sales):.1f} ms)"
        )
    return lines


def reports_table(backend: Backend, args: argparse.Namespace) -> list[str]:
    """What the year held, and each report query's times."""
    year = backend.year
    assert year is not None
    others = args.other_orders // OTHER_STORES * OTHER_STORES
    lines = [
        f"Reports, {backend.name}: the store's {args.orders:,} orders of {year.year} "
        f"({year.lines:,} lines, {args.orders - year.kept:,} cancelled) beside {others:,} of "
        f"{OTHER_STORES} other stores, copied in {year.seconds:.1f} s; "
        f"{args.report_requests} sequential requests per query after 2 warm-ups, each "
        "answer checked against the seeded totals:",
        "",
        "| query | request | median (ms) | p95 (ms) | max (ms) |",
        "|---|---|---:|---:|---:|",
    ]
    for name, path in report_queries(POS, year).items():
        timings = backend.reports[name]
        lines.append(
            f"| {name} | `GET {path}` | {statistics.median(timings):.1f} "
            f"| {quantile(timings, 95):.1f} | {max(timings):.1f} |"
        )
    return lines


def report(backends: list[Backend], args: argparse.Namespace, run: Run, command: str) -> str:
    measured = [backend for backend in backends if not backend.skipped]
    postgres = [backend.server_version for backend in measured if backend.server_version]
    lines = [
        "# Point of sale",
        "",
        run.headline(command) + " (compare the ratios within the run).",
        "",
        run.machine(),
        f"- Python {platform.python_version()}, granian {version('granian')} (ASGI, 1 worker), "
        f"litestar {version('litestar')}, SQLAlchemy {version('sqlalchemy')}, "
        f"aiosqlite {version('aiosqlite')}, asyncpg {version('asyncpg')}, "
        f"redis-py {version('redis')}"
        + (f", PostgreSQL {postgres[0]} on the same machine" if postgres else ""),
        f"- load: `wrk -t1 -c{args.connections} -d{args.duration}s "
        f"--timeout={chat.REQUEST_TIMEOUT:.0f}s --latency`; create order with "
        "`-s pos-order.lua` (the script in bench/pos.py): 2 or 3 random products with a size "
        "and maybe an extra, takeaway or dine-in; "
        f"{args.rounds} rounds in rotating order after a {WARMUP_SECONDS} s warm-up of each "
        f"case; medians below; whole run {run.elapsed:.0f} s",
        f"- data: one store with {args.products} active products in {len(ITEMS)} categories, "
        f"stock tracked ({STOCK:,} each), `{SEARCH_WORD}` in "
        + ", ".join(f"{b.matches} ({b.name})" for b in measured)
        + " descriptions; seeded in "
        + ", ".join(f"{b.seeded_seconds:.1f} s ({b.name})" for b in measured),
        f"- server: `{TARGET}`, `TOLLWAY_PLUGINS=bench,pos`, a config lifting the pos "
        f"`{PLAN}` plan to {LIMIT:,} requests/day, store time zone {ZONE}, tax "
        f"{TAX_BPS / 100:g} %; every response 2xx",
        "- baseline: `GET /v1/bench/ping` on the same server (the trivial route of "
        "`bench/run.py`, same database and rate limiter)",
        "",
        "| backend | case | request | req/s | ms/request | p50 (ms) | p99 (ms) "
        "| ratio to baseline |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for backend in measured:
        for case in backend.cases:
            rps = case.median("rps")
            lines.append(
                f"| {backend.name} + {backend.limiter} | {case.name} "
                f"| `{'POST' if case.post else 'GET'} {case.path}` | {rps:,.0f} "
                f"| {1e3 / rps:.2f} | {case.median('p50_ms'):.2f} | {case.median('p99_ms'):.2f} "
                f"| {ratio(case, backend):.3f} |"
            )
    lines += ["", *targets(backends), ""]
    for backend in measured:
        orders, units, taken, moved = backend.sold
        lines.append(
            f"Stock, {backend.name}: {orders:,} orders placed (warm-ups included), {units:,} "
            f"units on their lines, {taken:,} taken from stock, {moved:,} in the stock "
            f"movements: {verdict(units == taken == moved)}."
        )
        if backend.year is not None:
            lines += ["", *reports_table(backend, args)]
    for backend in measured:
        lines += ["", f"Per round, {backend.name} (req/s; ratio to the same round's baseline):"]
        lines += ["", *per_round_table(backend.cases, ratio=".3f")]
    for backend in backends:
        if backend.skipped:
            lines.append(f"\nNote: {backend.name} skipped: {backend.skipped}.")
    return "\n".join(lines) + "\n"


# --- main -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = shlex.join(["python", "bench/pos.py", *(sys.argv[1:] if argv is None else argv)])
    run = Run.begin()
    workdir = Path(tempfile.mkdtemp(prefix="tollway-bench-pos-"))
    backends: list[Any] = []
    runners: list[tuple[Any, Any]] = []
    if "sqlite" in args.backends:
        sqlite = Backend("SQLite", "memory", f"sqlite+aiosqlite:///{workdir / 'pos.db'}")
        runners.append((sqlite, run_backend))
    if "postgresql" in args.backends:
        # chat.run_postgres: a throwaway database, Redis under a prefix of its own.
        runners.append(
            (Backend("PostgreSQL", "Redis"), partial(chat.run_postgres, run=run_backend))
        )
    if not chat.run_all(runners, backends, args, workdir):
        return 1
    publish(report(backends, args, run, command), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
