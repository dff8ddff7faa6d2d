"""Short links: redirects with click capture on, against the trivial keyed route of the
same server; the redirect's latency at a fixed offered rate; analytics over a million
stored clicks.

One granian server (ASGI, 1 worker, ``apps:link_app``) per backend serves the short
links product and the gateway overhead bench's trivial route, ``GET /v1/bench/ping``:

* ``SQLite``     - a temporary SQLite file, the in-memory rate limiter, clicks written
  in batches by the serving process (the embedded profile);
* ``PostgreSQL`` - a temporary database on ``TOLLWAY_TEST_POSTGRES_URL``, the Redis rate
  limiter, and clicks sent to the Redis stream and written from it by the same process
  (the scale-out profile); skipped with a note when either does not answer.

Before the server starts, one account gets ``--links`` links (1,000). Measurements:

* ``baseline`` - ``GET /v1/bench/ping`` with a key, wrk ``-c --connections`` (32);
* ``redirect`` - ``GET /l/<code>``, a random one of the links per request (a wrk Lua
  script), with a browser's User-Agent and a Referer: every request a 302 whose click is
  captured, enriched and stored. Target: at least 0.6 of the baseline's throughput.
  Every click is the same visitor's (one address, one agent);
* ``visitors`` - the same with a random client address per request (``X-Forwarded-For``
  from loopback, a trusted proxy): nearly every click a new visitor's, as in real
  traffic, which the exact visitor counts pay for. Same target;
* after each redirect measurement the run waits until the server has stored every
  click it answered (its ``/metrics`` count of 302s) and checks each was stored once;
* ``open loop`` - ``--rate`` (500) redirects per second for ``--open-duration`` seconds
  from ``bench/openloop.py``: p50, p99 and p99.9 from each request's intended send time;
* ``analytics`` (PostgreSQL; ``--clicks`` 1,000,000 on one link over 90 days, inserted in
  bulk with their pre-aggregates): ``GET /v1/link/analytics/{id}`` for ``period=all``
  and ``30d`` in ``UTC`` and ``Asia/Kolkata`` (a +05:30 zone), sequentially, medians.
  Target: under 200 ms.

Run with ``python bench/links.py`` (``--help`` for the options); the report goes to
bench/results/links.md. Targets print as PASS/MISS; the exit status is 0 either way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import secrets
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
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
    rotating,
)
from loadgen import Measurement, run_wrk, run_wrk_script
from openloop import Load, Result, Template, measure, summary
from servers import HOST, Server, ServerError, running
from sqlalchemy import func, insert, select, text

from tollway import Gateway, load_settings
from tollway_link.models import Click, Link
from tollway_link.store import store as store_clicks

TARGET = "apps:link_app"
WARMUP_SECONDS = 3
REDIRECT_TARGET = 0.6
ANALYTICS_TARGET_MS = 200.0
OPEN_LOOP_P99_MS = 100.0
LIMIT = 10**9
CODE = "b{:05d}"
USER_AGENT = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36"
)
REFERER = "https://news.example.co.uk/story"
DESTINATION = "https://example.com/landing?utm_source=bench"
SCOPES = [apps.SCOPE, "link:links:read", "link:analytics:read"]
QUIET_SECONDS = 10.0
"""Seconds without a new stored click after which the rest of them count as lost."""
BOT_EVERY = 50
"""Every 50th seeded click is a bot's: stored, not counted."""

REDIRECT_SCRIPT = """\
-- bench/links.py: a random one of the seeded codes per request.
-- args: number of links, User-Agent, Referer, and "visitors" for a random client
-- address per request (X-Forwarded-For, loopback being a trusted proxy).
local links = 1
local visitors = false
function init(args)
  links = tonumber(args[1])
  wrk.headers["User-Agent"] = args[2]
  wrk.headers["Referer"] = args[3]
  visitors = args[4] == "visitors"
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end
function request()
  if visitors then
    wrk.headers["X-Forwarded-For"] = string.format("%d.%d.%d.%d", math.random(1, 223),
      math.random(0, 255), math.random(0, 255), math.random(1, 254))
  end
  return wrk.format("GET", string.format("/l/b%05d", math.random(0, links - 1)))
end
"""

_REDIRECTS = re.compile(
    r'^tollway_requests_total\{method="(GET|HEAD)",product="link-redirect",.*status="302"\} (\S+)$',
    re.MULTILINE,
)


@dataclass
class Backend:
    name: str
    limiter: str
    database_url: str = ""
    redis_prefix: str | None = None
    skipped: str | None = None
    cases: list[Measured] = field(default_factory=list)
    account_id: int = 0
    key: str = ""
    clicks_stored: int = 0
    answered: int = 0
    counted_ok: bool = True
    """Every link counted exactly its stored GET clicks after every measurement."""
    settle_seconds: list[float] = field(default_factory=list)
    open_loop: Result | None = None
    analytics: dict[str, list[float]] = field(default_factory=dict)
    server_version: str = ""

    @property
    def baseline(self) -> Measured:
        return self.cases[0]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("links.py", __doc__)
    parser.add_argument("--duration", type=int, default=8, help="seconds per measurement (8)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    parser.add_argument("--rounds", type=int, default=3, help="measurements per case (3)")
    parser.add_argument("--links", type=int, default=1_000, help="links seeded (1,000)")
    parser.add_argument("--rate", type=int, default=500, help="open-loop redirects/s (500)")
    parser.add_argument(
        "--open-duration", type=int, default=10, help="open-loop seconds measured (10)"
    )
    parser.add_argument(
        "--clicks", type=int, default=1_000_000, help="clicks of the analytics link (1,000,000)"
    )
    parser.add_argument(
        "--analytics-requests", type=int, default=15, help="analytics requests per query (15)"
    )
    add_backends(parser)
    add_redis_url(parser, "Redis of the PostgreSQL profile")
    add_output(parser, "links")
    args = parser.parse_args(argv)
    at_least_one(parser, args, "duration", "connections", "rounds", "links", "rate")
    return args


# --- seeding -----------------------------------------------------------------------


def gateway_for(database_url: str, redis_url: str | None = None) -> Gateway:
    settings = load_settings(
        environ={},
        database_url=database_url,
        redis_url=redis_url,
        plugins=[apps.PRODUCT, "link"],
        demo=False,
    )
    return Gateway(settings, extra_plugins=apps.plugins())


async def prepare(backend: Backend, links: int) -> None:
    """Migrate, create the account, its key and ``links`` links."""
    gateway = gateway_for(backend.database_url)
    try:
        await gateway.migrate()
        account = await gateway.accounts.create_account(
            "bench", {apps.PRODUCT: apps.PLAN, "link": "business"}
        )
        created = await gateway.accounts.create_key(account, name="bench", scopes=SCOPES)
        now = datetime.now(UTC)
        async with gateway.database.transaction() as session:
            await session.execute(
                insert(Link),
                [
                    {
                        "public_id": f"lnk_bench{index:011d}",
                        "account_id": account,
                        "code": CODE.format(index),
                        "destination_url": DESTINATION,
                        "tags": [],
                        "created_at": now - timedelta(days=120),
                        "updated_at": now,
                    }
                    for index in range(links)
                ],
            )
    finally:
        await gateway.database.dispose()
    backend.account_id, backend.key = account, created.key


async def stored_clicks(database_url: str) -> tuple[int, int, int]:
    """Clicks stored, distinct click ids, and the links' counters summed."""
    gateway = gateway_for(database_url)
    try:
        async with gateway.database.transaction() as session:
            stored = await session.scalar(select(func.count()).select_from(Click))
            distinct = await session.scalar(select(func.count(func.distinct(Click.id))))
            counted = await session.scalar(select(func.coalesce(func.sum(Link.clicks), 0)))
    finally:
        await gateway.database.dispose()
    return int(stored or 0), int(distinct or 0), int(counted or 0)


def answered_redirects(server: Server) -> dict[str, int]:
    """The server's own count of the 302s it sent, by method (``/metrics``)."""
    with urllib.request.urlopen(server.url("/metrics"), timeout=10) as response:
        text = response.read().decode()
    answered = {"GET": 0, "HEAD": 0}
    for method, value in _REDIRECTS.findall(text):
        answered[method] += int(float(value))
    return answered


def settle(backend: Backend, server: Server) -> None:
    """Wait until every click the server answered is stored, or until storing stops
    (:data:`QUIET_SECONDS` without a new row: the rest was lost), then check that none
    is stored twice and that the links count the stored GETs (a HEAD is stored, never
    counted)."""
    for _ in range(2):
        server.probe(apps.PATH, {"Authorization": f"Bearer {backend.key}"})
    clock = changed = time.monotonic()
    last = -1
    while True:
        # Read after the clicks: a request wrk left in flight may still be answered
        # after the probes (they do not queue behind it), its click stored with it.
        # (Clicks beyond the answers were once a stopped earlier run's, taken over
        # from a stream name shared between runs: see chat.limiter_env.)
        stored, distinct, counted = asyncio.run(stored_clicks(backend.database_url))
        answered = answered_redirects(server)
        total = answered["GET"] + answered["HEAD"]
        now = time.monotonic()
        if stored >= total or now - changed > QUIET_SECONDS:
            break
        if stored != last:
            last, changed = stored, now
        time.sleep(0.2)
    backend.settle_seconds.append(changed - clock if stored < total else now - clock)
    if stored != distinct or stored > total:
        raise BenchError(f"{stored:,} clicks stored ({distinct:,} distinct) of {total:,}")
    backend.answered, backend.clicks_stored = total, stored
    # The one HEAD (the start-up probe) was stored long before: the rest are GETs.
    backend.counted_ok = backend.counted_ok and counted == stored - answered["HEAD"]


# --- the server ----------------------------------------------------------------------


def write_config(workdir: Path) -> Path:
    path = workdir / "links.toml"
    path.write_text(
        f"[products.link-redirect.plans.anonymous.limits]\nredirects_per_minute = {LIMIT}\n"
        f"[products.link.plans.business]\nrequests_per_day = {LIMIT}\n"
    )
    return path


def start_server(backend: Backend, workdir: Path, redis_url: str) -> Server:
    env = {
        "TOLLWAY_DATABASE_URL": backend.database_url,
        "TOLLWAY_PLUGINS": f"{apps.PRODUCT},link",
        "TOLLWAY_DEMO": "false",
        "TOLLWAY_AUTO_MIGRATE": "false",
        "TOLLWAY_CONFIG": str(write_config(workdir)),
        "TOLLWAY_TRUSTED_PROXIES": "127.0.0.1",
        **chat.limiter_env(backend, redis_url),  # type: ignore[arg-type]  # same fields
    }
    server = Server(f"links-{backend.name.lower()}", TARGET, env, workdir)
    server.start(apps.PATH, {"Authorization": f"Bearer {backend.key}"})
    request = urllib.request.Request(server.url("/l/" + CODE.format(0)), method="HEAD")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        opener.open(request, timeout=10)
    except urllib.error.HTTPError as answer:
        if answer.code != 302 or answer.headers.get("location") != DESTINATION:
            raise ServerError(f"/l/{CODE.format(0)} answered {answer.code}") from None
    else:
        raise ServerError(f"/l/{CODE.format(0)} was not a redirect")
    return server


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def run_backend(backend: Backend, args: argparse.Namespace, workdir: Path) -> None:
    log(f"{backend.name}: seeding {args.links:,} links")
    asyncio.run(prepare(backend, args.links))
    headers = {"Authorization": f"Bearer {backend.key}"}
    script = workdir / "redirect.lua"
    script.write_text(REDIRECT_SCRIPT)
    baseline, redirect, visitors = Measured("baseline"), Measured("redirect"), Measured("visitors")
    backend.cases = [baseline, redirect, visitors]

    with running([]) as servers:
        log(f"{backend.name}: starting granian on {TARGET} ({backend.limiter} limiter)")
        server = start_server(backend, workdir, args.redis_url)
        servers.append(server)

        def one(case: Measured, seconds: int) -> Measurement:
            if case is baseline:
                return run_wrk(
                    server.url(apps.PATH),
                    duration=seconds,
                    connections=args.connections,
                    headers=headers,
                    timeout=chat.REQUEST_TIMEOUT,
                )
            result = run_wrk_script(
                server.url("/"),
                str(script),
                duration=seconds,
                connections=args.connections,
                script_args=[str(args.links), USER_AGENT, REFERER, case.name],
                timeout=chat.REQUEST_TIMEOUT,
            )
            settle(backend, server)
            return result

        log(f"{backend.name}: warming up, {WARMUP_SECONDS} s per case")
        for case in backend.cases:
            one(case, WARMUP_SECONDS)
        backend.settle_seconds.clear()
        log(f"{backend.name}: measuring, {args.rounds} rounds of {args.duration} s per case")
        for index, case in rotating(backend.cases, args.rounds):
            result = one(case, args.duration)
            case.runs.append(result)
            log(f"  round {index + 1}/{args.rounds} {case.name:<9} {result.rps:>8.0f} req/s")

        templates = [
            Template(
                "/l/" + CODE.format(index), headers={"User-Agent": USER_AGENT, "Referer": REFERER}
            )
            for index in range(args.links)
        ]
        load = Load(
            host=HOST,
            port=server.port,
            templates=templates,
            rate=args.rate,
            duration=args.open_duration,
            warmup=2.0,
            order="random",
            timeout=chat.REQUEST_TIMEOUT,
            expected=3,
        )
        backend.open_loop = measure(load)
        settle(backend, server)
        log(f"  open loop {args.rate:,} redirects/s: {summary(backend.open_loop)}")

        if not backend.name.startswith("SQLite") and args.clicks:
            run_analytics(backend, server, args)


# --- analytics -----------------------------------------------------------------------

ANALYTICS_QUERIES = {
    "all, UTC": "period=all&tz=UTC",
    "all, Asia/Kolkata": "period=all&tz=Asia/Kolkata",
    "30d, UTC": "period=30d&tz=UTC",
    "30d, Asia/Kolkata": "period=30d&tz=Asia/Kolkata",
}


def run_analytics(backend: Backend, server: Server, args: argparse.Namespace) -> None:
    log(f"{backend.name}: inserting {args.clicks:,} clicks on one link")
    clock = time.monotonic()
    link_id = asyncio.run(seed_clicks(backend, args.clicks))
    log(f"{backend.name}: inserted in {time.monotonic() - clock:.1f} s")
    headers = {"Authorization": f"Bearer {backend.key}"}
    for name, query in ANALYTICS_QUERIES.items():
        url = server.url(f"/v1/link/analytics/{link_id}?{query}")
        timings: list[float] = []
        total = 0
        for attempt in range(args.analytics_requests + 2):
            started = time.perf_counter()
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as answer:
                body = json.loads(answer.read())
            if attempt >= 2:  # two warm-ups
                timings.append((time.perf_counter() - started) * 1000)
            total = body["total_clicks"]
        people = args.clicks - len(range(0, args.clicks, BOT_EVERY))
        if name.startswith("all") and total != people:
            raise BenchError(f"analytics counted {total:,} clicks, not the {people:,} people's")
        backend.analytics[name] = timings
        log(f"  analytics {name}: median {statistics.median(timings):.1f} ms ({total:,} clicks)")


async def seed_clicks(backend: Backend, clicks: int) -> str:
    """A link with ``clicks`` clicks spread over the last 90 days (referrers, countries,
    devices and a visitor per 3 clicks varied), written through the product's own
    storage (raw rows, pre-aggregates and counters in one go per batch)."""
    gateway = gateway_for(backend.database_url)
    public_id = "lnk_benchanalytics01"  # lnk_ and 16 letters or digits
    now = datetime.now(UTC)
    try:
        async with gateway.database.transaction() as session:
            link = Link(
                public_id=public_id,
                account_id=backend.account_id,
                code="analytics",
                destination_url=DESTINATION,
                tags=[],
                created_at=now - timedelta(days=90),
                updated_at=now,
            )
            session.add(link)
            await session.flush()
            link_key = link.id
        referrers = ["(direct)", "(qr)", "google.com", "facebook.com", "news.example.co.uk"]
        countries = ["US", "DE", "JP", "IN", "BR", "FR", "XX"]
        devices = ["desktop", "mobile", "mobile", "tablet"]
        span = 90 * 86_400
        batch = 20_000
        for start in range(0, clicks, batch):
            rows = [
                {
                    "id": secrets.token_hex(16),
                    "link_id": link_key,
                    "account_id": backend.account_id,
                    "clicked_at": now - timedelta(seconds=(index * 7_919) % span),
                    "referrer": referrers[index % 5],
                    "country": countries[index % 7],
                    "device": devices[index % 4],
                    "visitor": f"{index // 3:032x}",
                    "bot": index % BOT_EVERY == 0,
                }
                for index in range(start, min(start + batch, clicks))
            ]
            await store_clicks(gateway.database, rows)
        if not gateway.database.is_sqlite:
            # The state autovacuum keeps a live database in (statistics, visibility map).
            autocommit = gateway.database.engine.execution_options(isolation_level="AUTOCOMMIT")
            async with autocommit.connect() as connection:
                await connection.execute(text("VACUUM ANALYZE"))
    finally:
        await gateway.database.dispose()
    return public_id


# --- reporting -----------------------------------------------------------------------


def verdict(passed: bool) -> str:
    return "**PASS**" if passed else "**MISS**"


def report(backends: list[Backend], args: argparse.Namespace, run: Run) -> str:
    lines = [
        "# Short links",
        "",
        f"{run.headline('python bench/links.py')} (compare the ratios within the run).",
        "",
        run.machine(),
        f"- Python {sys.version.split()[0]}, granian {version('granian')} (ASGI, 1 worker), "
        f"litestar {version('litestar')}, SQLAlchemy {version('sqlalchemy')}"
        + "".join(
            f", PostgreSQL {backend.server_version}"
            for backend in backends
            if backend.server_version
        ),
        f"- load: `wrk -t1 -c{args.connections} -d{args.duration}s --latency`, the redirects "
        f"with `redirect.lua` (a random one of {args.links:,} codes, a browser User-Agent and "
        "a Referer; `redirect` from one client address, `visitors` from a random one per "
        f"request); {args.rounds} rounds in rotating order after a {WARMUP_SECONDS} s "
        f"warm-up; medians below; whole run {run.elapsed:.0f} s",
        "- after every redirect measurement the run waits until the server has stored every "
        "click it answered (its `/metrics` count of 302s) and checks that each is stored "
        "once and counted once",
        "",
        "| backend | case | req/s | p50 (ms) | p99 (ms) | ratio to baseline |",
        "|---|---|---:|---:|---:|---:|",
    ]
    measured = [backend for backend in backends if not backend.skipped]
    for backend in measured:
        for case in backend.cases:
            ratio = case.median("rps") / backend.baseline.median("rps")
            lines.append(
                f"| {backend.name} + {backend.limiter} | {case.name} | "
                f"{case.median('rps'):,.0f} | {case.median('p50_ms'):.2f} | "
                f"{case.median('p99_ms'):.2f} | {ratio:.3f} |"
            )
    for backend in backends:
        if backend.skipped:
            lines.append(f"\n{backend.name}: skipped ({backend.skipped}).")
    lines += ["", "Targets:", ""]
    for backend in measured:
        for case in backend.cases[1:]:
            ratio = case.median("rps") / backend.baseline.median("rps")
            lines.append(
                f"- {backend.name}: {case.name} >= {REDIRECT_TARGET} of the baseline: "
                f"{verdict(ratio >= REDIRECT_TARGET)} ({ratio:.3f})"
            )
        if backend.open_loop is not None:
            step = backend.open_loop
            failed = step.unexpected + step.errors
            good = not step.invalid and not failed and step.p99_ms < OPEN_LOOP_P99_MS
            lines.append(
                f"- {backend.name}: open loop at {args.rate:,} redirects/s: p50 "
                f"{step.p50_ms:.2f} ms, p99 {step.p99_ms:.2f} ms, p99.9 {step.p999_ms:.2f} ms, "
                f"{failed} failed; p99 < {OPEN_LOOP_P99_MS:.0f} ms "
                f"{verdict(good)}" + (f" (invalid: {step.invalid})" if step.invalid else "")
            )
        for name, timings in backend.analytics.items():
            median = statistics.median(timings)
            lines.append(
                f"- {backend.name}: analytics over {args.clicks:,} clicks ({name}): median "
                f"{median:.1f} ms, max {max(timings):.1f} ms; under "
                f"{ANALYTICS_TARGET_MS:.0f} ms {verdict(median < ANALYTICS_TARGET_MS)}"
            )
        lost = backend.answered - backend.clicks_stored
        lines.append(
            f"- {backend.name}: {backend.answered:,} redirects answered, "
            f"{backend.clicks_stored:,} clicks stored, none twice, links counting their "
            f"stored GETs {verdict(backend.counted_ok)}; clicks lost "
            f"{verdict(lost == 0)} ({lost:,}); the last stored "
            f"{statistics.median(backend.settle_seconds or [0.0]):.2f} s (median) after "
            "a measurement ended"
        )
    for backend in measured:
        lines += ["", f"Per round, {backend.name} (req/s; ratio to the same round's baseline):"]
        lines += ["", *per_round_table(backend.cases, ratio=".3f")]
    return "\n".join(lines) + "\n"


# --- main ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run.begin()
    workdir = Path(tempfile.mkdtemp(prefix="tollway-bench-links-"))
    backends: list[Any] = []
    runners: list[tuple[Any, Any]] = []
    if "sqlite" in args.backends:
        sqlite = Backend("SQLite", "memory", f"sqlite+aiosqlite:///{workdir / 'links.db'}")
        runners.append((sqlite, run_backend))
    if "postgresql" in args.backends:
        # chat.run_postgres: a throwaway database, Redis under a prefix of its own.
        runners.append(
            (Backend("PostgreSQL", "Redis"), partial(chat.run_postgres, run=run_backend))
        )
    if not chat.run_all(runners, backends, args, workdir):
        return 1
    publish(report(backends, args, run), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
