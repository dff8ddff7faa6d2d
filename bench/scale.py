"""Scale-out: the gateway on PostgreSQL and Redis with one and two server processes,
and the Redis rate limiter's decisions per round trip, in one run.

Four granian servers (ASGI, ``--workers 1`` and ``--workers 2``), all started in this
run and measured with wrk in turns (the order rotates every round), medians reported:

* ``bare``           - plain Litestar (``apps:bare_app``), the baseline;
* ``pipeline-redis`` - ``GET /v1/bench/ping`` through the whole gateway pipeline with
  the Redis rate limiter, served by ``apps:chat_app`` (the bench route beside the chat
  product) on a temporary PostgreSQL database;
* ``chat-list``      - ``GET /v1/chat/conversations?limit=25`` on the same servers: a
  keyed read of one seeded account's first page from PostgreSQL.

Each at 1 and 2 processes, at ``--connections`` (64). Reported: the pipeline's
throughput as a ratio of bare's with the same number of processes (target >= 0.75,
as in bench/run.py), each case's scaling from 1 to 2 processes, and p50/p99. The chat
plan is lifted to 10^9 requests/day, so every response must be a 2xx (wrk's non-2xx
count is checked to be 0). The CPU time of the server's processes and of the whole
machine is read around each measurement: on a shared machine it shows whether a
second process found a core to run on.

Then, in this process, ``RedisRateLimiter.hit`` is driven by many concurrent
coroutines for ``--limiter-seconds`` per scenario against a private ``redis-server``
(the shared one when none is installed): decisions per second, and ``EVALSHA`` calls
(``INFO commandstats``) per decision (target: at most one) and decisions per call.

Targets print as PASS/MISS; the exit status is 0 either way. The report goes to
stdout and bench/results/scale.md, the chart to bench/results/scale.png. Run with
``python bench/scale.py`` (``--quick`` for a short check, ``--help`` for the options).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import apps
import chat
import psutil
from common import (
    BenchError,
    Measured,
    Run,
    add_output,
    add_redis_url,
    argument_parser,
    at_least_one,
    log,
    postgres_database,
    postgres_version,
    publish,
    redis_drop,
    rotating,
)
from loadgen import LoadError, Measurement, loop_factory, run_wrk, wrk_path
from servers import Server, ServerError, running

from tollway.ratelimit import Algorithm, Quota, RedisRateLimiter
from tollway.testing import RedisServer, free_port, redis_unreachable

WARMUP_SECONDS = 3
REQUEST_TIMEOUT = 10.0
"""wrk's per-request timeout (s): a slow response is measured, not a socket error."""
PROCESSES = (1, 2)
LIST_PATH = f"{chat.CHAT}/conversations?limit={chat.PAGE_SIZE}"
PIPELINE_TARGET = 0.75
ROUND_TRIP_TARGET = 1.0
LIMITER_KEYS = 100
"""Distinct rate limit keys the limiter scenarios spread their hits over (accounts)."""
LIMITER_SCENARIOS = [
    (Algorithm.FIXED_WINDOW, 1),
    (Algorithm.FIXED_WINDOW, 64),
    (Algorithm.FIXED_WINDOW, 256),
    (Algorithm.SLIDING_WINDOW, 64),
]
"""(algorithm, concurrent callers); fixed is the plans' daily quota, sliding the
public QR API's per-minute window."""
FULL = {"duration": 10, "rounds": 3, "limiter_seconds": 3.0, "conversations": 10_000}
QUICK = {"duration": 3, "rounds": 1, "limiter_seconds": 1.0, "conversations": 5_000}


@dataclass
class Case(Measured):
    server: str
    path: str
    processes: int
    cpu: list[CpuUse] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.name} x{self.processes}"

    def median_cpu(self, attribute: str) -> float:
        return float(statistics.median(getattr(use, attribute) for use in self.cpu))

    def per_core(self) -> float:
        """Median of each measurement's req/s per core the server used: throughput
        with the CPU that other programs took from the server factored out."""
        pairs = zip(self.runs, self.cpu, strict=True)
        return float(statistics.median(run.rps / use.server for run, use in pairs))


@dataclass(frozen=True)
class CpuUse:
    """Cores busy during one measurement: the server's processes, and the whole
    machine (everything else on it included)."""

    server: float
    machine: float


@dataclass(frozen=True)
class LimiterResult:
    algorithm: Algorithm
    callers: int
    decisions: int
    seconds: float
    evalsha: int
    other_scripts: int
    """EVAL and SCRIPT calls in the same span: fallbacks that would add round trips."""
    cpu_seconds: float
    errors: int

    @property
    def per_second(self) -> float:
        return self.decisions / self.seconds

    @property
    def round_trips(self) -> float:
        return (self.evalsha + self.other_scripts) / self.decisions

    @property
    def per_call(self) -> float:
        return self.decisions / self.evalsha if self.evalsha else 0.0


def make_cases() -> list[Case]:
    cases = []
    for name, server, path in (
        ("bare", "bare", apps.PATH),
        ("pipeline-redis", "gateway", apps.PATH),
        ("chat-list", "gateway", LIST_PATH),
    ):
        cases += [Case(name, f"{server}-{n}", path, n) for n in PROCESSES]
    return cases


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("scale.py", __doc__)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a short check: --duration 3 --rounds 1 --limiter-seconds 1 --conversations 5000",
    )
    parser.add_argument("--duration", type=int, help="seconds per measurement (10)")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections (64)")
    parser.add_argument("--rounds", type=int, help="measurements per case (3)")
    parser.add_argument("--limiter-seconds", type=float, help="seconds per limiter scenario (3)")
    parser.add_argument("--conversations", type=int, help="conversations seeded (10,000)")
    add_redis_url(parser, "Redis of the servers")
    add_output(parser, "scale")
    args = parser.parse_args(argv)
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    at_least_one(parser, args, "duration", "connections", "rounds")
    if args.limiter_seconds <= 0:
        parser.error("--limiter-seconds must be positive")
    if args.conversations < chat.PAGE_SIZE:
        parser.error(f"--conversations must be at least {chat.PAGE_SIZE}")
    args.messages = 1
    return args


# --- HTTP --------------------------------------------------------------------------


def server_env(
    database_url: str, args: argparse.Namespace, workdir: Path, tag: str
) -> dict[str, str]:
    """The gateway's settings: PostgreSQL, Redis for rate limits and jobs (names of
    this run only), and the chat plan lifted so nothing is refused."""
    return {
        "TOLLWAY_DATABASE_URL": database_url,
        "TOLLWAY_PLUGINS": f"{apps.PRODUCT},chat",
        "TOLLWAY_DEMO": "false",
        "TOLLWAY_AUTO_MIGRATE": "false",
        "TOLLWAY_CONFIG": str(chat.write_config(workdir)),
        "TOLLWAY_REDIS_URL": args.redis_url,
        "TOLLWAY_RATE_LIMIT_PREFIX": f"tollway-bench-scale:{tag}:",
        "TOLLWAY_JOB_QUEUE_NAME": f"tollway-bench-scale-{tag}",
    }


def start_servers(
    gateway_env: dict[str, str],
    workdir: Path,
    headers: dict[str, str],
    args: argparse.Namespace,
    servers: list[Server],
) -> dict[str, Server]:
    started: dict[str, Server] = {}
    for processes in PROCESSES:
        for name, target, env in (
            ("bare", "apps:bare_app", {}),
            ("gateway", chat.TARGET, gateway_env),
        ):
            key = f"{name}-{processes}"
            log(f"starting {key}: granian --workers {processes} --factory {target}")
            server = Server(key, target, env, workdir, workers=processes)
            servers.append(server)
            server.start(apps.PATH, headers)
            started[key] = server
            if name == "gateway":
                check_gateway(server, headers, args)
    return started


def check_gateway(server: Server, headers: dict[str, str], args: argparse.Namespace) -> None:
    if "x-ratelimit-limit" not in server.probe(apps.PATH, headers):
        raise ServerError(f"{server.name}: no rate limit headers, is the pipeline running?")
    answered, body = chat.fetch(server, LIST_PATH, headers)
    if answered.get("x-ratelimit-limit") != str(chat.LIMIT):
        raise ServerError(
            f"chat limit is {answered.get('x-ratelimit-limit')}, not {chat.LIMIT}: config?"
        )
    if body["total"] != args.conversations or len(body["data"]) != chat.PAGE_SIZE:
        raise ServerError(f"the first page lists {len(body['data'])} of {body['total']}")


def server_cpu_seconds(server: Server) -> float:
    """CPU time used so far by the server's supervisor and its worker processes."""
    assert server.pid is not None
    main = psutil.Process(server.pid)
    total = 0.0
    for process in (main, *main.children(recursive=True)):
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += times.user + times.system
    return total


def machine_busy_seconds() -> float:
    """CPU time all cores spent on anything but idling (summed over cores)."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def measure(
    case: Case, server: Server, args: argparse.Namespace, headers: dict[str, str], seconds: int
) -> tuple[Measurement, CpuUse]:
    """One wrk run, and the cores the server and the whole machine kept busy meanwhile."""
    clock, used, busy = time.monotonic(), server_cpu_seconds(server), machine_busy_seconds()
    result = run_wrk(
        server.url(case.path),
        duration=seconds,
        connections=args.connections,
        headers=headers,
        timeout=REQUEST_TIMEOUT,
    )
    elapsed = time.monotonic() - clock
    cpu = CpuUse(
        (server_cpu_seconds(server) - used) / elapsed, (machine_busy_seconds() - busy) / elapsed
    )
    for _ in range(2):  # what wrk left in flight is answered before the next case
        server.probe(apps.PATH, headers)
    return result, cpu


def rounds(
    cases: list[Case], started: dict[str, Server], args: argparse.Namespace, headers: dict[str, str]
) -> None:
    log(f"warming up, {WARMUP_SECONDS} s per case")
    for case in cases:
        measure(case, started[case.server], args, headers, WARMUP_SECONDS)
    log(f"measuring: {args.rounds} rounds of {args.duration} s per case")
    for index, case in rotating(cases, args.rounds):
        result, cpu = measure(case, started[case.server], args, headers, args.duration)
        case.runs.append(result)
        case.cpu.append(cpu)
        log(
            f"  round {index + 1}/{args.rounds} {case.label:<18} {result.rps:>8.0f} req/s"
            f"  p50 {result.p50_ms:7.2f} ms  p99 {result.p99_ms:7.2f} ms"
            f"  server {cpu.server:.2f} / machine {cpu.machine:.2f} cores"
        )


def run_http(args: argparse.Namespace, workdir: Path, cases: list[Case]) -> str:
    """Seed, serve and measure; returns PostgreSQL's version."""
    tag = secrets.token_hex(6)
    with postgres_database() as database_url:
        try:
            server_version = asyncio.run(postgres_version(database_url))
            log(f"seeding {args.conversations:,} conversations")
            seeded = asyncio.run(chat.prepare(database_url, args))
            headers = {"Authorization": f"Bearer {seeded.key}"}
            env = server_env(database_url, args, workdir, tag)
            with running([]) as servers:
                started = start_servers(env, workdir, headers, args, servers)
                rounds(cases, started, args, headers)
        finally:
            with contextlib.suppress(Exception):
                counted = asyncio.run(redis_drop(args.redis_url, f"tollway-bench-scale:{tag}:"))
                log(f"Redis counted {counted:,} hits for this run (keys now deleted)")
    return server_version


# --- the Redis limiter in process --------------------------------------------------


def commandstats(url: str) -> dict[str, int]:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        stats: dict[str, Any] = client.info("commandstats")
    finally:
        client.close()
    return {name.removeprefix("cmdstat_"): int(row["calls"]) for name, row in stats.items()}


async def drive_limiter(
    url: str, algorithm: Algorithm, callers: int, seconds: float
) -> LimiterResult:
    """``callers`` coroutines calling ``hit`` in a loop for ``seconds``, each on one of
    ``LIMITER_KEYS`` keys, with a quota that never refuses."""
    prefix = f"tollway-bench-limiter:{secrets.token_hex(6)}:"
    window = 86400 if algorithm is Algorithm.FIXED_WINDOW else 60
    quota = Quota(10**9, window, algorithm)
    limiter = RedisRateLimiter.from_url(url, prefix=prefix)
    try:
        await limiter.hit("warm-up", quota)  # connects and loads the script
        decisions = errors = 0
        before = commandstats(url)
        cpu = time.process_time()
        clock = time.perf_counter()
        deadline = clock + seconds

        async def caller(number: int) -> None:
            nonlocal decisions, errors
            key = f"account-{number % LIMITER_KEYS}"
            while time.perf_counter() < deadline:
                try:
                    await limiter.hit(key, quota)
                    decisions += 1
                except Exception:  # counted: a timeout on a busy machine is a result too
                    errors += 1

        await asyncio.gather(*(caller(n) for n in range(callers)))
        elapsed = time.perf_counter() - clock
        cpu = time.process_time() - cpu
        after = commandstats(url)
    finally:
        await limiter.close()
        await redis_drop(url, prefix)

    def delta(command: str) -> int:
        return after.get(command, 0) - before.get(command, 0)

    return LimiterResult(
        algorithm,
        callers,
        decisions,
        elapsed,
        evalsha=delta("evalsha"),
        other_scripts=delta("eval") + delta("script"),
        cpu_seconds=cpu,
        errors=errors,
    )


def run_limiter(args: argparse.Namespace, notes: list[str]) -> tuple[list[LimiterResult], str]:
    """Every scenario; returns the results and which Redis they ran on."""
    binary = shutil.which("redis-server")
    own = RedisServer(free_port(), binary) if binary else None
    url = args.redis_url
    where = f"on the shared Redis at {url}"
    if own is not None:
        own.start()
        url, where = own.url, "on a private redis-server (no other clients)"
    else:
        notes.append(
            "redis-server is not installed: the limiter ran on the shared Redis, whose "
            "EVALSHA count includes any other client's calls in the same seconds."
        )
    results = []
    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            for algorithm, callers in LIMITER_SCENARIOS:
                result = runner.run(drive_limiter(url, algorithm, callers, args.limiter_seconds))
                results.append(result)
                log(
                    f"  limiter {algorithm.value:<7} {callers:>3} callers "
                    f"{result.per_second:>8.0f} decisions/s  {result.round_trips:.3f} "
                    f"EVALSHA/decision  {result.per_call:6.1f} decisions/EVALSHA"
                )
    finally:
        if own is not None:
            own.stop()
    return results, where


# --- reporting ---------------------------------------------------------------------


def find(cases: list[Case], name: str, processes: int) -> Case:
    return next(c for c in cases if c.name == name and c.processes == processes)


def pipeline_ratio(cases: list[Case], processes: int) -> float:
    return find(cases, "pipeline-redis", processes).median("rps") / find(
        cases, "bare", processes
    ).median("rps")


def per_core_ratio(cases: list[Case], processes: int) -> float:
    return (
        find(cases, "pipeline-redis", processes).per_core()
        / find(cases, "bare", processes).per_core()
    )


def scaling(cases: list[Case], name: str) -> float:
    return find(cases, name, 2).median("rps") / find(cases, name, 1).median("rps")


def verdict(passed: bool, value: str) -> str:
    return f"**{'PASS' if passed else 'MISS'}** ({value})"


def report(
    cases: list[Case],
    limiter: list[LimiterResult],
    args: argparse.Namespace,
    run: Run,
    *,
    postgres: str,
    limiter_redis: str,
    notes: list[str],
) -> str:
    lines = [
        "# Scale-out",
        "",
        run.headline(f"python bench/scale.py{''.join(' ' + a for a in sys.argv[1:])}")
        + " (compare the ratios within the run, not absolute numbers across runs).",
        "",
        run.machine(),
        f"- Python {platform.python_version()}, granian {version('granian')}, "
        f"litestar {version('litestar')}, SQLAlchemy {version('sqlalchemy')}, "
        f"asyncpg {version('asyncpg')}, redis-py {version('redis')}, PostgreSQL {postgres} "
        "and Redis on the same machine",
        f"- load: `wrk -t1 -c{args.connections} -d{args.duration}s "
        f"--timeout={REQUEST_TIMEOUT:.0f}s --latency`, the same key header on every request; "
        f"{args.rounds} rounds in rotating order after a {WARMUP_SECONDS} s warm-up of each "
        f"case; medians below; every response 2xx (wrk: no non-2xx, no socket errors); "
        f"whole run {run.elapsed:.0f} s",
        "- servers: `granian --interface asgi --workers N --factory apps:bare_app` (bare) and "
        f"`... --factory {chat.TARGET}` (`TOLLWAY_PLUGINS=bench,chat`, PostgreSQL, "
        "`TOLLWAY_REDIS_URL`: Redis rate limiter and job queue), N = 1 and 2, all four "
        "started in this run; `tollway serve --workers N` runs the same granian",
        f"- data: one account with {args.conversations:,} conversations (bench/chat.py's "
        f"seed), its chat plan lifted to {chat.LIMIT:,} requests/day, so nothing is refused",
        "",
        "| case | processes | request | req/s | p50 (ms) | p99 (ms) | ratio to bare "
        "| scaling 1 -> 2 | server cores | machine cores | req/s per server core |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in cases:
        bare = find(cases, "bare", case.processes).median("rps")
        scale = f"{scaling(cases, case.name):.2f}" if case.processes == 2 else ""
        lines.append(
            f"| {case.name} | {case.processes} | `GET {case.path}` | {case.median('rps'):,.0f} "
            f"| {case.median('p50_ms'):.2f} | {case.median('p99_ms'):.2f} "
            f"| {case.median('rps') / bare:.2f} | {scale} | {case.median_cpu('server'):.2f} "
            f"| {case.median_cpu('machine'):.2f} | {case.per_core():,.0f} |"
        )
    lines += [
        "",
        "server cores: CPU time of the server's processes (supervisor and workers) over "
        f"the measurement; machine cores: all CPU time on the machine (wrk, PostgreSQL, "
        f"Redis and whatever else runs on it included), out of {os.cpu_count()}. Medians. "
        "req/s per server core factors out the CPU other programs took from the server; "
        "per core, pipeline-redis/bare is "
        + ", ".join(
            f"{per_core_ratio(cases, n):.2f} with {n} process{'es' if n > 1 else ''}"
            for n in PROCESSES
        )
        + ".",
        "",
        "Targets: pipeline-redis/bare >= "
        + "; ".join(
            f"{PIPELINE_TARGET:.2f} with {n} process{'es' if n > 1 else ''} "
            + verdict(
                pipeline_ratio(cases, n) >= PIPELINE_TARGET, f"{pipeline_ratio(cases, n):.2f}"
            )
            for n in PROCESSES
        )
        + ". Scaling has no target: the two cores also run wrk, Redis and PostgreSQL.",
        "",
        f"## Redis rate limiter, in process, {limiter_redis}",
        "",
        f"`RedisRateLimiter.hit` from N coroutines in a loop for {args.limiter_seconds:g} s, "
        f"on {LIMITER_KEYS} keys, a quota that never refuses; event loop "
        f"{'asyncio' if loop_factory() is None else 'uvloop'}; EVALSHA counted "
        "with `INFO commandstats` before and after (EVAL and SCRIPT calls included in "
        "round trips, as fallbacks would be); CPU is this process's.",
        "",
        "| algorithm | callers | decisions | decisions/s | EVALSHA | EVALSHA per decision "
        "| decisions per EVALSHA | CPU µs per decision | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for result in limiter:
        lines.append(
            f"| {result.algorithm.value} | {result.callers} | {result.decisions:,} "
            f"| {result.per_second:,.0f} | {result.evalsha:,} | {result.round_trips:.3f} "
            f"| {result.per_call:.1f} | {1e6 * result.cpu_seconds / result.decisions:.1f} "
            f"| {result.errors} |"
        )
    worst = max(result.round_trips for result in limiter)
    lines += [
        "",
        f"Target: round trips per decision <= {ROUND_TRIP_TARGET:g} "
        + verdict(worst <= ROUND_TRIP_TARGET, f"at most {worst:.3f}"),
        "",
        "Per round (req/s; ratio to the same round's bare with as many processes):",
        "",
        "| round | " + " | ".join(case.label for case in cases) + " |",
        "|---:|" + "---:|" * len(cases),
    ]
    for index in range(args.rounds):
        cells = []
        for case in cases:
            base = find(cases, "bare", case.processes).runs[index].rps
            rps = case.runs[index].rps
            cells.append(f"{rps:,.0f}" if case.name == "bare" else f"{rps:,.0f} ({rps / base:.2f})")
        lines.append(f"| {index + 1} | " + " | ".join(cells) + " |")
    if notes:
        lines += ["", *(f"Note: {note}" for note in notes)]
    return "\n".join(lines) + "\n"


def _processes_bars(
    axes: Any, cases: list[Case], names: list[str], detail: Callable[[Case], str]
) -> None:
    """Bars of ``names`` at 1 and 2 processes, each labelled with its req/s and
    ``detail(case)``; the x labels carry each case's scaling."""
    width = 0.38
    for offset, processes in enumerate(PROCESSES):
        chosen = [find(cases, name, processes) for name in names]
        positions = [n + (offset - 0.5) * width for n in range(len(names))]
        bars = axes.bar(
            positions,
            [case.median("rps") for case in chosen],
            width,
            label=f"{processes} process{'es' if processes > 1 else ''}",
            color=f"C{offset}",
        )
        labels = [f"{case.median('rps'):,.0f}{detail(case)}" for case in chosen]
        axes.bar_label(bars, labels, fontsize=8, padding=2)
    axes.set_xticks(
        range(len(names)), [f"{name}\n(1 -> 2: {scaling(cases, name):.2f}x)" for name in names]
    )
    axes.set_ylabel("requests/s (median)")
    axes.margins(y=0.25)


def chart(
    cases: list[Case],
    limiter: list[LimiterResult],
    args: argparse.Namespace,
    path: Path,
    started: datetime,
) -> None:
    """Three panels: the trivial route bare and through the pipeline, the PostgreSQL
    read, both at 1 and 2 processes; and the limiter's decisions/s."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import StrMethodFormatter

    figure, (overhead, read, redis) = plt.subplots(
        1, 3, figsize=(14, 5.2), gridspec_kw={"width_ratios": [2, 1.2, 2.4]}
    )

    def ratio_to_bare(case: Case) -> str:
        bare = find(cases, "bare", case.processes).median("rps")
        ratio = "" if case.name == "bare" else f"\n{case.median('rps') / bare:.2f}x bare"
        return f"{ratio}\n{case.median_cpu('server'):.2f} cores"

    _processes_bars(overhead, cases, ["bare", "pipeline-redis"], ratio_to_bare)
    overhead.set_title(f"GET {apps.PATH}", fontsize=10)
    overhead.legend(loc="upper right", fontsize=8)  # the same colours in the next panel
    _processes_bars(
        read,
        cases,
        ["chat-list"],
        lambda case: f"\np50 {case.median('p50_ms'):,.0f} ms\np99 {case.median('p99_ms'):,.0f} ms",
    )
    read.set_title("GET /v1/chat/conversations?limit=25", fontsize=10)

    bars = redis.bar(range(len(limiter)), [r.per_second for r in limiter], 0.6, color="C3")
    redis.bar_label(
        bars,
        [f"{r.per_second:,.0f}/s\n{r.round_trips:.3f} EVALSHA\nper decision" for r in limiter],
        fontsize=8,
        padding=2,
    )
    redis.set_xticks(
        range(len(limiter)),
        [f"{r.algorithm.value}\n{r.callers} caller{'s' if r.callers > 1 else ''}" for r in limiter],
    )
    redis.set_ylabel("decisions/s")
    redis.set_title("RedisRateLimiter.hit in one process", fontsize=10)
    redis.margins(y=0.3)
    for axes in (overhead, read, redis):
        axes.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    figure.suptitle(
        f"tollway scale-out: granian at {args.connections} connections on PostgreSQL + Redis; "
        f"{started:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} shared cores"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


# --- main --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run.begin()
    workdir = Path(tempfile.mkdtemp(prefix="tollway-bench-scale-"))
    cases = make_cases()
    notes: list[str] = []
    try:
        wrk_path()
        if problem := asyncio.run(redis_unreachable(args.redis_url)):
            log(f"bench: Redis at {args.redis_url} unreachable ({problem})")
            return 1
        postgres = run_http(args, workdir, cases)
        log(f"Redis limiter: {len(LIMITER_SCENARIOS)} scenarios of {args.limiter_seconds:g} s")
        limiter, limiter_redis = run_limiter(args, notes)
    except (LoadError, ServerError, BenchError) as error:
        log(f"bench: {error}")
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    document = report(
        cases, limiter, args, run, postgres=postgres, limiter_redis=limiter_redis, notes=notes
    )
    publish(document, args.output)
    image = args.output.with_suffix(".png")
    chart(cases, limiter, args, image, run.started)
    log(f"written to {image}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
