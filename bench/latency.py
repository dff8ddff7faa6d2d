"""Latency at fixed offered rates, open loop: what a caller waits at a given load.

Every other latency in bench/ is wrk's, closed loop at saturation: each connection
waits for its answer before sending again, so p99 is about the queue (connections)
over throughput and says nothing about a server that is not saturated. Here the load
is open loop (``bench/openloop.py``, in a process of its own): requests are sent at
fixed intended times whatever the server does, and each latency runs from the intended
send time to the end of the response, so queueing shows, as in wrk2.

Per backend, as in ``bench/chat.py``:

* ``SQLite``     - a temporary SQLite file and the in-memory rate limiter;
* ``PostgreSQL`` - a temporary database on ``TOLLWAY_TEST_POSTGRES_URL`` and the Redis
  rate limiter; skipped with a note when either does not answer (or ``--skip-postgres``).

one granian server (ASGI, 1 worker) serves ``apps:chat_app`` on chat.py's seeded data
(``--conversations``, 10,000) and then another ``apps:qr_app``. Cases (``--cases``):

* ``trivial`` - ``GET /v1/bench/ping``, the pipeline's trivial route;
* ``list``    - ``GET /v1/chat/conversations?limit=25``;
* ``post``    - ``POST /v1/chat/conversations/{id}/messages``, a random seeded
  conversation per request (posted messages are delivered as in chat.py);
* ``qr``      - ``GET /api/qr?size=200&format=png&data=...``, the keyless public image
  API, every request a new ``data`` value: a cache miss, so every request renders.

For each case: the maximum throughput, closed loop (wrk at ``--connections``, after a
warm-up), then open-loop steps at 10, 25, 50, 65, 80 and 90 % of it and at 100, 250, 500,
1,000 and 2,000 req/s below it, each ``--warmup`` + ``--duration`` seconds; the steps
stop early once one overloads the server (an error, or p99 over a second). Reported:
p50/p99/p99.9 per step, the highest rate with p99 < 25 ms, and PASS/MISS for the spec's
promise, p99 < 100 ms at 80 % of the measured maximum. A step where the generator could
not keep the rate is marked invalid, not read as the server's latency. The exit status
is 0 whatever the verdicts, 1 only if the run failed. Run with ``python
bench/latency.py`` (``--help`` for the options); the report goes to stdout and
bench/results/latency.md.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import platform
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib.metadata import version
from pathlib import Path

import chat
import qr
from common import (
    Run,
    add_output,
    add_redis_url,
    argument_parser,
    at_least_one,
    log,
    publish,
)
from loadgen import Measurement
from openloop import (
    CPU_LIMIT,
    GENERATOR_NICE,
    LAG_LIMIT,
    LATE_LIMIT,
    Load,
    Result,
    Template,
    measure,
    summary,
)
from servers import HOST, Server, running

CASES = ["trivial", "list", "post", "qr"]
CHAT_CASES = {"trivial": "baseline", "list": "list", "post": "post"}
"""Our chat cases by the name bench/chat.py gives them."""
FRACTIONS = [0.10, 0.25, 0.50, 0.65, 0.80, 0.90]
"""Steps as fractions of the measured maximum."""
RATES = [100, 250, 500, 1000, 2000]
"""Steps in req/s, those below the maximum."""
PROMISE_FRACTION = 0.80
PROMISE_MS = 100.0
"""The spec's promise: p99 under this at ``PROMISE_FRACTION`` of the maximum."""
GOOD_MS = 25.0
"""The p99 under which the report names each case's highest rate."""
OVERLOAD_MS = 1000.0
"""A step's p99 beyond which higher steps are not run: they would only queue more."""
QR_SIZE = 200


@dataclass
class Case:
    name: str
    request: str
    """``METHOD path`` as the report shows it."""
    closed: Measurement | None = None
    """The maximum throughput, closed loop."""
    steps: list[Result] = field(default_factory=list)
    stopped: str | None = None
    """Why the higher steps were not run."""

    @property
    def maximum(self) -> float:
        assert self.closed is not None
        return self.closed.rps

    @property
    def promise_rate(self) -> int:
        return rate_at(PROMISE_FRACTION, self.maximum)

    def best(self) -> Result | None:
        """The highest step, answered in full, with p99 under ``GOOD_MS``."""
        good = [step for step in self.steps if clean(step) and step.p99_ms < GOOD_MS]
        return max(good, key=lambda step: step.rate, default=None)

    def promise(self) -> str:
        """PASS/MISS for p99 < ``PROMISE_MS`` at ``PROMISE_FRACTION`` of the maximum."""
        step = next((s for s in self.steps if s.rate == self.promise_rate), None)
        if step is None:
            return f"**MISS** (not run: {self.stopped})" if self.stopped else "not measured"
        if step.invalid:
            return "no verdict (the generator could not keep the rate)"
        verdict = "PASS" if clean(step) and step.p99_ms < PROMISE_MS else "MISS"
        return f"**{verdict}** ({ms(step.p99_ms)} ms)"


@dataclass
class Backend(chat.Backend):
    measured: list[Case] = field(default_factory=list)


def clean(step: Result) -> bool:
    """A valid step where every request got a 2xx."""
    return not step.invalid and not step.errors and not step.unexpected


def rate_at(fraction: float, maximum: float) -> int:
    """``fraction`` of ``maximum`` in whole req/s, at least 1."""
    return max(1, round(fraction * maximum))


def step_rates(maximum: float) -> list[int]:
    """The offered rates to step through, ascending: the fractions of ``maximum``, and
    the fixed rates below it that are not within 10 % of one of those."""
    rates = {rate_at(fraction, maximum) for fraction in FRACTIONS}
    rates |= {
        rate
        for rate in RATES
        if rate < maximum and all(abs(rate - other) > 0.1 * other for other in rates)
    }
    return sorted(rates)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("latency.py", __doc__)
    parser.add_argument("--duration", type=int, default=5, help="seconds per rate step (5)")
    parser.add_argument(
        "--warmup", type=float, default=1.0, help="seconds of each step not recorded (1)"
    )
    parser.add_argument(
        "--max-duration", type=int, default=5, help="seconds of the closed-loop maximum (5)"
    )
    parser.add_argument(
        "--connections", type=int, default=32, help="wrk connections for the maximum (32)"
    )
    parser.add_argument("--pool", type=int, default=64, help="open-loop connections (64)")
    parser.add_argument(
        "--poisson", action="store_true", help="Poisson arrivals (default: evenly spaced)"
    )
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated: {', '.join(CASES)} (all)"
    )
    parser.add_argument("--skip-postgres", action="store_true", help="SQLite only")
    parser.add_argument(
        "--conversations", type=int, default=10_000, help="conversations seeded (10,000)"
    )
    parser.add_argument(
        "--messages", type=int, default=3, help="messages seeded per conversation (3)"
    )
    add_redis_url(parser, "Redis of the PostgreSQL profile")
    add_output(parser, "latency")
    args = parser.parse_args(argv)
    at_least_one(parser, args, "duration", "max_duration", "connections", "pool")
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    if args.conversations < chat.PAGE_SIZE:
        parser.error(f"--conversations must be at least {chat.PAGE_SIZE} (one page)")
    cases = [name.strip() for name in args.cases.split(",") if name.strip()]
    if not cases or not set(cases) <= set(CASES):
        parser.error(f"--cases takes {', '.join(CASES)}")
    args.cases = [name for name in CASES if name in cases]
    return args


# --- one case ----------------------------------------------------------------------


def run_case(
    case: Case,
    server: Server,
    args: argparse.Namespace,
    closed: Callable[[int], Measurement],
    templates: Callable[[int, int], list[Template]],
    settle: Callable[[], None],
) -> None:
    """The closed-loop maximum (after a warm-up), then the open-loop steps.
    ``closed(seconds)`` runs wrk; ``templates(step, rate)`` are a step's requests;
    ``settle()`` waits until the server is idle again."""
    closed(chat.WARMUP_SECONDS)
    settle()
    case.closed = closed(args.max_duration)
    settle()
    log(
        f"  {case.name}: max {case.maximum:,.0f} req/s closed loop "
        f"(wrk p50 {case.closed.p50_ms:.2f} ms, p99 {case.closed.p99_ms:.2f} ms)"
    )
    for index, rate in enumerate(step_rates(case.maximum)):
        load = Load(
            host=HOST,
            port=server.port,
            templates=templates(index, rate),
            rate=rate,
            duration=args.duration,
            warmup=args.warmup,
            connections=args.pool,
            arrivals="poisson" if args.poisson else "even",
            order="random",
            seed=index,
            timeout=chat.REQUEST_TIMEOUT,
        )
        step = measure(load)
        settle()
        case.steps.append(step)
        log(f"  {case.name} {rate:>6,} req/s: {summary(step)}")
        if not step.invalid and (step.errors or step.p99_ms > OVERLOAD_MS):
            case.stopped = f"the server was overloaded at {rate:,} req/s"
            return


def run_chat(backend: Backend, args: argparse.Namespace, workdir: Path) -> None:
    """The chat cases on one server seeded as bench/chat.py seeds it."""
    log(f"{backend.name}: seeding {args.conversations:,} conversations")
    seeded = backend.seeded = asyncio.run(chat.prepare(backend.database_url, args))
    headers = {"Authorization": f"Bearer {seeded.key}"}
    script = workdir / "chat-post.lua"
    script.write_text(chat.POST_SCRIPT)
    named = {case.name: case for case in chat.make_cases()}
    with running([]) as servers:
        log(f"{backend.name}: starting granian on {chat.TARGET} ({backend.limiter} limiter)")
        server = chat.start_server(backend, workdir, args, headers)
        servers.append(server)
        for name in (name for name in args.cases if name in CHAT_CASES):
            source = named[CHAT_CASES[name]]
            if source.post:
                templates = [
                    Template(
                        source.path.replace("<id>", str(conversation)),
                        "POST",
                        {**headers, "Content-Type": "application/json"},
                        chat.POST_BODY,
                    )
                    for conversation in range(
                        seeded.first_conversation, seeded.last_conversation + 1
                    )
                ]
            else:
                templates = [Template(source.path, headers=headers)]
            case = Case(name, f"{'POST' if source.post else 'GET'} {source.path}")
            backend.measured.append(case)
            run_case(
                case,
                server,
                args,
                partial(chat.measure, source, server, args, headers, script, seeded),
                fixed(templates),
                partial(chat.settle, backend, server, headers, source),
            )


def fixed(templates: list[Template]) -> Callable[[int, int], list[Template]]:
    """The same requests for every step."""
    return lambda step, rate: templates


def qr_templates(step: int, rate: int, args: argparse.Namespace) -> list[Template]:
    """A new ``data`` value for every request of a step: all cache misses. wrk's values
    carry its thread number (from 1) where these carry 0, so none repeats."""
    count = math.ceil(rate * (args.warmup + args.duration) * (1.2 if args.poisson else 1)) + 10
    return [
        Template(qr.image_path(qr.data_value(step + 1, 0, counter), QR_SIZE))
        for counter in range(1, count + 1)
    ]


def run_qr(backend: Backend, args: argparse.Namespace, workdir: Path) -> None:
    """The public QR image case on a server of its own, on the same database and limiter."""
    asyncio.run(qr.prepare_database(backend.database_url))
    script = workdir / "qr-miss.lua"
    script.write_text(qr.MISS_SCRIPT)
    with running([]) as servers:
        log(f"{backend.name}: starting granian on {qr.TARGET} ({backend.limiter} limiter)")
        extra = chat.limiter_env(backend, args.redis_url)
        server = qr.start_server(workdir, backend.database_url, QR_SIZE, extra)
        servers.append(server)
        case = Case("qr", f"GET {qr.ROUTE}?size={QR_SIZE}&format=png&data=<new every request>")
        backend.measured.append(case)
        miss = qr.http_miss(
            server, script, argparse.Namespace(connections=args.connections, size=QR_SIZE)
        )
        tags = iter(range(1, 99))  # each wrk run's data values apart from the others'
        run_case(
            case,
            server,
            args,
            lambda seconds: miss(next(tags), seconds),
            partial(qr_templates, args=args),
            partial(qr.drained, server, QR_SIZE),
        )


def run_backend(backend: chat.Backend, args: argparse.Namespace, workdir: Path) -> None:
    assert isinstance(backend, Backend)
    if any(name in CHAT_CASES for name in args.cases):
        run_chat(backend, args, workdir)
    if "qr" in args.cases:
        run_qr(backend, args, workdir)


# --- reporting ---------------------------------------------------------------------


def ms(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:,.2f}"


def step_row(step: Result, case: Case) -> str:
    share = f"{step.rate / case.maximum:.0%}"
    if step.rate == case.promise_rate:
        share = f"**{share}**"
    generator = f"late {step.late:.1%}, CPU {step.cpu:.0%}"
    if step.invalid:
        # Not the server's latency: the generator fell behind its own schedule.
        latencies = "| **invalid** " * 4
        generator = f"**invalid**: {generator}"
    else:
        p999 = ms(step.p999_ms) if step.requests >= 1000 else "-"
        latencies = f"| {ms(step.p50_ms)} | {ms(step.p99_ms)} | {p999} | {ms(step.max_ms)} "
    return (
        f"| {step.rate:,.0f} | {share} | {step.achieved_rps:,.0f} {latencies}"
        f"| {step.requests:,} | {step.unexpected} | {step.errors} | {step.waited:,} "
        f"| {generator} |"
    )


def summary_rows(backends: list[Backend]) -> list[str]:
    lines = [
        f"| backend | case | max req/s (closed loop) | highest rate with p99 < {GOOD_MS:.0f} ms "
        f"| p99 < {PROMISE_MS:.0f} ms at {PROMISE_FRACTION:.0%} of max |",
        "|---|---|---:|---:|---|",
    ]
    for backend in backends:
        for case in backend.measured:
            best = case.best()
            good = f"{best.rate:,.0f} ({ms(best.p99_ms)} ms)" if best else "none"
            lines.append(
                f"| {backend.name} + {backend.limiter} | {case.name} | {case.maximum:,.0f} "
                f"| {good} | {case.promise()} |"
            )
    return lines


def report(backends: list[Backend], args: argparse.Namespace, run: Run) -> str:
    measured = [backend for backend in backends if not backend.skipped]
    postgres = [backend.server_version for backend in measured if backend.server_version]
    arrivals = "Poisson" if args.poisson else "evenly spaced"
    lines = [
        "# Open-loop latency",
        "",
        run.headline(" ".join(["python bench/latency.py", *sys.argv[1:]]))
        + " (latency depends on the machine's load: compare within the run).",
        "",
        run.machine(),
        f"- Python {platform.python_version()}, granian {version('granian')} (ASGI, 1 worker), "
        f"litestar {version('litestar')}, SQLAlchemy {version('sqlalchemy')}, "
        f"aiosqlite {version('aiosqlite')}, asyncpg {version('asyncpg')}, "
        f"redis-py {version('redis')}, uvloop {version('uvloop')} (generator)"
        + (f", PostgreSQL {postgres[0]} on the same machine" if postgres else ""),
        f"- maximum: `wrk -t1 -c{args.connections} -d{args.max_duration}s "
        f"--timeout={chat.REQUEST_TIMEOUT:.0f}s --latency` after a {chat.WARMUP_SECONDS} s "
        "warm-up (post and qr with bench/chat.py's and bench/qr.py's Lua scripts)",
        "- steps: `bench/openloop.py` in its own process (real-time scheduling, else nice "
        f"{GENERATOR_NICE}, where allowed), {arrivals} arrivals, a pool of "
        f"{args.pool} keep-alive connections opened first; {args.warmup:g} s of load not "
        f"recorded, then {args.duration} s recorded; latency from each request's intended "
        "send time to the end of its response (waiting for a free connection included); "
        f"a step is invalid when over {LATE_LIMIT:.0%} of its requests were issued more than "
        f"{LAG_LIMIT * 1e3:g} ms late or the generator used over {CPU_LIMIT:.0%} of a core",
        f"- data: bench/chat.py's seeding, one account with {args.conversations:,} "
        f"conversations of {args.messages} messages; chat plan lifted to "
        f"{chat.LIMIT:,} requests/day and the QR anonymous tier to {qr.LIMIT:,}/minute, so "
        "nothing is refused; posts go to a random seeded conversation and are delivered "
        "(the run waits for the backlog after each step); qr: a new `data` value per "
        f"request, {QR_SIZE} px PNG",
        f"- whole run {run.elapsed:.0f} s",
        "",
        "## Summary",
        "",
        *summary_rows(measured),
        "",
        "p99.9 is shown for steps of at least 1,000 requests; a failed or unanswered "
        "request counts as infinitely slow (∞). `waited`: requests that found all "
        f"{args.pool} connections busy (their wait is in their latency). Bold: the "
        f"{PROMISE_FRACTION:.0%} step. `generator`: the share of requests issued over "
        f"{LAG_LIMIT * 1e3:g} ms behind schedule and the generator's CPU; an invalid step's "
        "latencies are the generator's, not the server's, and are not shown.",
    ]
    for backend in measured:
        for case in backend.measured:
            closed = case.closed
            assert closed is not None
            lines += [
                "",
                f"## {backend.name} + {backend.limiter}: {case.name}, `{case.request}`",
                "",
                f"Maximum {case.maximum:,.0f} req/s closed loop (wrk at {args.connections} "
                f"connections: p50 {closed.p50_ms:.2f} ms, p99 {closed.p99_ms:.2f} ms).",
                "",
                "| offered req/s | of max | achieved | p50 (ms) | p99 (ms) | p99.9 (ms) "
                "| max (ms) | requests | non-2xx | errors | waited | generator |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
                *(step_row(step, case) for step in case.steps),
            ]
            if case.stopped:
                lines += ["", f"Higher steps not run: {case.stopped}."]
    skipped = [backend for backend in backends if backend.skipped]
    if skipped:
        lines += ["", *(f"Note: {backend.name} skipped: {backend.skipped}." for backend in skipped)]
    return "\n".join(lines) + "\n"


# --- main --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run.begin()
    workdir = Path(tempfile.mkdtemp(prefix="tollway-bench-latency-"))
    backends: list[Backend] = []
    sqlite = Backend("SQLite", "memory", f"sqlite+aiosqlite:///{workdir / 'latency.db'}")
    runners: list[tuple[Backend, chat.Runner]] = [(sqlite, run_backend)]
    if args.skip_postgres:
        backends.append(Backend("PostgreSQL", "Redis", skipped="--skip-postgres"))
    else:
        runners.append(
            (Backend("PostgreSQL", "Redis"), partial(chat.run_postgres, run=run_backend))
        )
    if not chat.run_all(runners, backends, args, workdir):
        return 1
    publish(report(backends, args, run), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
