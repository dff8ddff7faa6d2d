"""Soak: mixed traffic at a steady rate against the scale-out profile, watching every
process's memory and every response's status.

The deployment, all on this machine: ``tollway serve --workers 2`` (two granian
worker processes under one supervisor, ``TOLLWAY_RUN_JOBS=false``) and one
``tollway worker`` process, on a temporary PostgreSQL database (created and dropped
like the test suite's) and Redis (rate limits and the job queue, under names of this
run only), with the ``chat`` and ``qr`` plugins. One account has ``--conversations``
chat conversations in email inboxes; the chat plugin sends every posted message by
SMTP to a sink in this process (aiosmtpd), through a job the worker process runs.

Traffic, from this process at ``--rate`` requests per second (an open loop: requests
start on a fixed schedule whether or not earlier ones have answered), after a
``--warmup`` at the same rate:

* 50 % keyed reads: a page of ``GET /v1/chat/conversations`` or one conversation's
  ``GET /v1/chat/conversations/{id}/messages``;
* 15 % writes: ``POST /v1/chat/conversations/{id}/messages`` (each one emailed);
* 35 % public QR images: ``GET /api/qr`` with one of 500 data values (a fixed set,
  so the render cache stops growing once each is rendered, at well under 1 MiB).

Plans are lifted in the config, so no response should be a 429. The resident set
size (RSS) of the gateway's supervisor, each of its workers and the worker process is
sampled before traffic, after the warm-up, every ``--sample-every`` seconds and at the
end. The report gives each process's RSS and growth over the soak, requests by kind
and status, latencies, and checks: no 5xx (FAIL otherwise), no failed requests, every
posted message delivered, memory flat (growth over the soak at most 10 %). The exit
status is 0 unless the run could not be made. Run with ``python bench/soak.py``
(``--minutes 1`` for a short check, ``--help`` for the options); the report goes to
stdout and bench/results/soak.md.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import platform
import random
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import chat
import psutil
from aiosmtpd.controller import Controller
from common import (
    Run,
    add_output,
    add_redis_url,
    argument_parser,
    log,
    postgres_database,
    postgres_version,
    publish,
    quantile,
)
from loadgen import loop_factory
from sqlalchemy import text, update

from tollway import Gateway, load_settings
from tollway.testing import GatewayProcess, WorkerProcess, free_port, redis_unreachable
from tollway_chat.models import Inbox

PLUGINS = ["chat", "qr"]
SCOPES = ["chat:conversations:read", "chat:messages:read", "chat:messages:write"]
GATEWAY_WORKERS = 2
QR_VALUES = 500
REQUEST_TIMEOUT = 10.0
CONNECTIONS = 64
"""Keep-alive connections of the load generator."""
MAX_IN_FLIGHT = 256
"""Requests the load generator lets wait at once (for an answer or a connection); a
request due beyond that is counted as skipped: the deployment did not keep up."""
MEMORY_TARGET = 0.10
"""Largest RSS growth over the soak, as a fraction of the RSS after the warm-up."""
DELIVERY_WAIT = 180.0
MIX = [("read", 50), ("write", 15), ("qr", 35)]


@dataclass
class Traffic:
    """What the load generator sent and got back, by kind."""

    statuses: dict[str, collections.Counter[int]] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter)
    )
    errors: dict[str, collections.Counter[str]] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter)
    )
    latencies: dict[str, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    skipped: int = 0
    sent: int = 0
    seconds: float = 0.0

    def count(self, predicate: Callable[[int], bool]) -> int:
        return sum(
            n for c in self.statuses.values() for status, n in c.items() if predicate(status)
        )


@dataclass
class Sample:
    at: float
    """Seconds since the soak (after the warm-up) started; negative before it."""
    rss: dict[str, int]


@dataclass
class Seeded:
    account_id: int
    key: str
    first: int
    last: int


class Sink:
    """An SMTP server that counts what it receives."""

    def __init__(self) -> None:
        self.received = 0
        self.port = free_port()
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.received += 1
        return "250 OK"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("soak.py", __doc__)
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the soak (10)")
    parser.add_argument(
        "--rate",
        type=float,
        default=30.0,
        help="requests per second (30: about 60 %% of what this mix got on the shared\n"
        "2-core machine, so the soak tests staying power, not saturation)",
    )
    parser.add_argument(
        "--warmup", type=float, default=30.0, help="seconds of traffic before the soak (30)"
    )
    parser.add_argument(
        "--sample-every", type=float, default=30.0, help="seconds between RSS samples (30)"
    )
    parser.add_argument(
        "--conversations", type=int, default=2_000, help="conversations seeded (2,000)"
    )
    add_redis_url(parser, "Redis")
    add_output(parser, "soak")
    args = parser.parse_args(argv)
    for name in ("minutes", "rate", "sample_every"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    if args.conversations < chat.PAGE_SIZE:
        parser.error(f"--conversations must be at least {chat.PAGE_SIZE}")
    return args


# --- setup -------------------------------------------------------------------------


async def prepare(database_url: str, conversations: int) -> Seeded:
    """Migrate; one account on the chat ``business`` plan with bench/chat.py's seed,
    its inboxes switched to email."""
    settings = load_settings(environ={}, database_url=database_url, plugins=PLUGINS, demo=False)
    gateway = Gateway(settings)
    try:
        await gateway.migrate()
        account = await gateway.accounts.create_account("soak", {"chat": chat.PLAN})
        created = await gateway.accounts.create_key(account, name="soak", scopes=SCOPES)
        async with gateway.database.transaction() as session:
            ids = await chat.seed(session, account, conversations, 1)
            await session.execute(
                update(Inbox).where(Inbox.account_id == account).values(channel_type="email")
            )
        autocommit = gateway.database.engine.execution_options(isolation_level="AUTOCOMMIT")
        async with autocommit.connect() as connection:
            await connection.execute(text("VACUUM ANALYZE"))
    finally:
        await gateway.database.dispose()
    return Seeded(account, created.key, ids[0], ids[-1])


def write_config(workdir: Path, smtp_port: int) -> Path:
    path = workdir / "soak.toml"
    path.write_text(
        f"[products.chat.plans.{chat.PLAN}]\n"
        f"requests_per_day = {chat.LIMIT}\n\n"
        "[products.chat.settings]\n"
        'smtp_host = "127.0.0.1"\n'
        f"smtp_port = {smtp_port}\n"
        'smtp_from = "soak@tollway.example"\n\n'
        "[products.qr.plans.anonymous.limits]\n"
        f"image_per_minute = {chat.LIMIT}\n"
        f"json_per_minute = {chat.LIMIT}\n"
    )
    return path


def processes(gateway: GatewayProcess, worker: WorkerProcess) -> dict[str, int]:
    """Name -> pid of every process of the deployment: the supervisor, its workers
    (granian's worker processes are its children) and the worker process."""
    assert gateway.process is not None
    assert worker.process is not None
    found = {"serve (supervisor)": gateway.process.pid}
    children = psutil.Process(gateway.process.pid).children(recursive=True)
    for number, child in enumerate(sorted(children, key=lambda c: c.pid), start=1):
        found[f"serve worker {number}"] = child.pid
    found["tollway worker"] = worker.process.pid
    return found


def wait_for_workers(gateway: GatewayProcess, timeout: float = 60.0) -> None:
    assert gateway.process is not None
    deadline = time.monotonic() + timeout
    while len(psutil.Process(gateway.process.pid).children(recursive=True)) < GATEWAY_WORKERS:
        if time.monotonic() > deadline:
            raise RuntimeError(f"tollway serve has no {GATEWAY_WORKERS} workers:\n{gateway.log}")
        time.sleep(0.2)


def sample(pids: dict[str, int], at: float) -> Sample:
    rss = {}
    for name, pid in pids.items():
        with contextlib.suppress(psutil.NoSuchProcess):
            rss[name] = psutil.Process(pid).memory_info().rss
    return Sample(at, rss)


# --- traffic -----------------------------------------------------------------------


class LoadGenerator:
    def __init__(self, base_url: str, rate: float, seeded: Seeded, traffic: Traffic) -> None:
        self.rate = rate
        self.seeded = seeded
        self.traffic = traffic
        self.rng = random.Random(7)
        self.kinds = [kind for kind, weight in MIX for _ in range(weight)]
        # aiohttp rather than httpx: on this machine httpx spent 4-13 ms of CPU per
        # request (its pool grows costly with many connections), aiohttp under 1 ms.
        self.client = aiohttp.ClientSession(
            base_url=base_url,
            connector=aiohttp.TCPConnector(limit=CONNECTIONS),
            timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT),
        )
        self.headers = {"Authorization": f"Bearer {seeded.key}"}
        self.in_flight: set[asyncio.Task[None]] = set()

    def request(self) -> tuple[str, str, str, Any]:
        """(kind, method, path, json body) of the next request."""
        kind = self.rng.choice(self.kinds)
        conversation = self.rng.randint(self.seeded.first, self.seeded.last)
        if kind == "qr":
            data = quote(f"https://example.com/soak/{self.rng.randrange(QR_VALUES)}", safe="")
            return kind, "GET", f"/api/qr?size=200&format=png&data={data}", None
        if kind == "write":
            body = {"content": f"Soak reply {self.traffic.sent}."}
            return kind, "POST", f"{chat.CHAT}/conversations/{conversation}/messages", body
        if self.rng.random() < 0.5:
            pages = max(1, (self.seeded.last - self.seeded.first + 1) // chat.PAGE_SIZE)
            page = self.rng.randint(1, min(pages, 40))
            return kind, "GET", f"{chat.CHAT}/conversations?limit=25&page={page}", None
        return kind, "GET", f"{chat.CHAT}/conversations/{conversation}/messages", None

    async def one(self, kind: str, method: str, path: str, body: Any) -> None:
        headers = {} if kind == "qr" else self.headers
        clock = time.perf_counter()
        try:
            async with self.client.request(method, path, json=body, headers=headers) as response:
                await response.read()
        except (aiohttp.ClientError, TimeoutError) as error:
            self.traffic.errors[kind][type(error).__name__] += 1
            return
        self.traffic.latencies[kind].append(time.perf_counter() - clock)
        self.traffic.statuses[kind][response.status] += 1

    async def run(self, seconds: float, on_tick: Callable[[], None] | None = None) -> None:
        """Start ``rate`` requests per second on a fixed schedule for ``seconds``."""
        interval = 1.0 / self.rate
        start = time.monotonic()
        number = 0
        while (due := start + number * interval) < start + seconds:
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            number += 1
            if on_tick is not None:
                on_tick()
            if len(self.in_flight) >= MAX_IN_FLIGHT:
                self.traffic.skipped += 1
                continue
            self.traffic.sent += 1
            task = asyncio.create_task(self.one(*self.request()))
            self.in_flight.add(task)
            task.add_done_callback(self.in_flight.discard)
        self.traffic.seconds += time.monotonic() - start

    async def finish(self) -> None:
        if self.in_flight:
            await asyncio.wait(self.in_flight)
        await self.client.close()


async def soak(
    args: argparse.Namespace, base_url: str, seeded: Seeded, pids: dict[str, int]
) -> tuple[Traffic, list[Sample]]:
    traffic = Traffic()
    generator = LoadGenerator(base_url, args.rate, seeded, traffic)
    samples = [sample(pids, -args.warmup)]
    if args.warmup:
        log(f"warm-up: {args.warmup:g} s at {args.rate:g} requests/s")
        await generator.run(args.warmup)
    seconds = args.minutes * 60
    start = time.monotonic()
    samples.append(sample(pids, 0.0))
    next_sample = start + args.sample_every

    def on_tick() -> None:
        # Sampling takes well under a millisecond per process: done between requests.
        nonlocal next_sample
        now = time.monotonic()
        if now >= next_sample:
            samples.append(sample(pids, now - start))
            next_sample += args.sample_every
            errors = sum(sum(c.values()) for c in traffic.errors.values())
            log(
                f"  {now - start:5.0f} s: {traffic.sent:,} sent, "
                f"{traffic.count(lambda s: s >= 500)} 5xx, {errors} errors, "
                + ", ".join(f"{k} {v / 2**20:.0f}" for k, v in samples[-1].rss.items())
                + " MiB RSS"
            )

    log(
        f"soak: {args.minutes:g} min at {args.rate:g} requests/s, RSS every {args.sample_every:g} s"
    )
    await generator.run(seconds, on_tick)
    samples.append(sample(pids, time.monotonic() - start))
    await generator.finish()
    return traffic, samples


async def wait_delivered(database_url: str, account: int) -> tuple[dict[str, int], float]:
    """Wait until no message of the account is pending (at most ``DELIVERY_WAIT``)."""
    clock = time.monotonic()
    while True:
        counts = await chat.delivery_counts(database_url, account)
        waited = time.monotonic() - clock
        if not counts.get("pending") or waited > DELIVERY_WAIT:
            return counts, waited
        await asyncio.sleep(1.0)


# --- reporting ---------------------------------------------------------------------


def mib(size: int) -> str:
    return f"{size / 2**20:,.1f}"


def slope(samples: list[Sample], name: str) -> float:
    """Least-squares RSS trend over the soak, MiB per minute."""
    points = [(s.at / 60, s.rss[name] / 2**20) for s in samples if s.at >= 0 and name in s.rss]
    if len(points) < 2:
        return 0.0
    return statistics.linear_regression(*zip(*points, strict=True)).slope


@dataclass
class Outcome:
    traffic: Traffic
    samples: list[Sample]
    posted: int
    delivery: dict[str, int]
    drain_seconds: float
    received: int
    log_errors: int
    replaced: list[str]
    server_version: str


def checks(outcome: Outcome) -> list[tuple[str, bool, str, str]]:
    """(what, passed, verdict word on failure, detail)."""
    traffic = outcome.traffic
    server_errors = traffic.count(lambda s: s >= 500)
    failed = sum(sum(c.values()) for c in traffic.errors.values())
    refused = traffic.count(lambda s: 400 <= s < 500)
    start, end = next(s for s in outcome.samples if s.at == 0), outcome.samples[-1]
    growth = {
        name: (end.rss[name] - rss) / rss for name, rss in start.rss.items() if name in end.rss
    }
    worst = max(growth, key=lambda name: growth[name])
    return [
        ("no 5xx", server_errors == 0, "FAIL", f"{server_errors} responses were 5xx"),
        (
            "no failed requests (timeouts, connection errors)",
            failed == 0,
            "FAIL",
            f"{failed} requests failed",
        ),
        ("no 4xx (plans are lifted)", refused == 0, "FAIL", f"{refused} responses were 4xx"),
        (
            "steady rate held",
            traffic.skipped == 0,
            "MISS",
            f"{traffic.skipped} requests skipped, {MAX_IN_FLIGHT} already waiting",
        ),
        (
            "every posted message delivered",
            outcome.delivery.get("sent", 0) >= outcome.posted
            and not outcome.delivery.get("pending")
            and not outcome.delivery.get("failed"),
            "FAIL",
            f"{outcome.posted:,} posted; delivery status counts {outcome.delivery}",
        ),
        (
            "same processes throughout (none restarted)",
            not outcome.replaced,
            "FAIL",
            ", ".join(outcome.replaced) or "all there",
        ),
        (
            f"memory flat (RSS growth over the soak <= {MEMORY_TARGET:.0%})",
            growth[worst] <= MEMORY_TARGET,
            "MISS",
            f"largest growth {growth[worst]:+.1%} ({worst})",
        ),
    ]


def report(outcome: Outcome, args: argparse.Namespace, run: Run) -> str:
    traffic, samples = outcome.traffic, outcome.samples
    before = samples[0]
    start = next(s for s in samples if s.at == 0)
    end = samples[-1]
    lines = [
        "# Soak",
        "",
        run.headline(f"python bench/soak.py{''.join(' ' + a for a in sys.argv[1:])}") + ".",
        "",
        run.machine(),
        f"- Python {platform.python_version()}, granian {version('granian')}, "
        f"litestar {version('litestar')}, SQLAlchemy {version('sqlalchemy')}, "
        f"asyncpg {version('asyncpg')}, redis-py {version('redis')}, saq {version('saq')}, "
        f"aiohttp {version('aiohttp')}, psutil {version('psutil')}, "
        f"PostgreSQL {outcome.server_version} and Redis on the same machine",
        f"- deployment: `TOLLWAY_RUN_JOBS=false tollway serve --workers {GATEWAY_WORKERS} "
        f"--plugins {','.join(PLUGINS)}` and one `tollway worker`, PostgreSQL + Redis "
        "(rate limits, job queue); chat messages emailed to an SMTP sink in the bench "
        "process by the worker",
        f"- traffic: {args.rate:g} requests/s on a fixed schedule (open loop, at most "
        f"{MAX_IN_FLIGHT} waiting, aiohttp on {CONNECTIONS} keep-alive connections), "
        f"a {args.warmup:g} s warm-up then "
        f"{args.minutes:g} min; mix "
        + ", ".join(f"{weight} % {kind}" for kind, weight in MIX)
        + f" (reads: a conversation page or a conversation's messages, {args.conversations:,} "
        f"conversations; writes: a message posted to a conversation; qr: `GET /api/qr` of "
        f"{QR_VALUES} data values); sent {traffic.sent:,} in {traffic.seconds:.0f} s "
        f"({traffic.sent / traffic.seconds:.1f}/s); whole run {run.elapsed:.0f} s",
        f"- RSS (psutil) sampled before traffic, after the warm-up (soak start), every "
        f"{args.sample_every:g} s and at the end: {len(samples)} samples",
        "",
        "## Checks",
        "",
    ]
    for what, passed, failure, detail in checks(outcome):
        lines.append(f"- {what}: **{'PASS' if passed else failure}** ({detail})")
    lines += [
        "",
        "## Memory",
        "",
        "| process | RSS before traffic (MiB) | soak start (MiB) | end (MiB) | growth (MiB) "
        "| growth | second half (MiB) | trend (MiB/min) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    middle = min(samples, key=lambda item: abs(item.at - end.at / 2))
    for name, rss in start.rss.items():
        final = end.rss.get(name)
        if final is None:
            lines.append(f"| {name} | {mib(before.rss.get(name, 0))} | {mib(rss)} | gone | | | | |")
            continue
        lines.append(
            f"| {name} | {mib(before.rss.get(name, 0))} | {mib(rss)} | {mib(final)} "
            f"| {(final - rss) / 2**20:+.1f} | {(final - rss) / rss:+.1%} "
            f"| {(final - middle.rss.get(name, final)) / 2**20:+.1f} "
            f"| {slope(samples, name):+.2f} |"
        )
    lines += [
        "",
        "## Requests",
        "",
        "| kind | requests | by status | failed | p50 (ms) | p99 (ms) | max (ms) |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for kind, _ in MIX:
        statuses = traffic.statuses.get(kind, collections.Counter())
        latencies = traffic.latencies.get(kind, [])
        errors = traffic.errors.get(kind, collections.Counter())
        lines.append(
            f"| {kind} | {sum(statuses.values()) + sum(errors.values()):,} | "
            + ", ".join(f"{status}: {n:,}" for status, n in sorted(statuses.items()))
            + f" | {sum(errors.values())}"
            + (f" ({', '.join(f'{k}: {v}' for k, v in errors.items())})" if errors else "")
            + f" | {quantile(latencies, 50) * 1e3:.1f} | {quantile(latencies, 99) * 1e3:.1f} "
            f"| {max(latencies, default=0) * 1e3:.0f} |"
        )
    lines += [
        "",
        f"Deliveries: {outcome.posted:,} messages posted; by status after the soak "
        f"{outcome.delivery} (waited {outcome.drain_seconds:.0f} s for the last); the SMTP "
        f"sink received {outcome.received:,} emails. Lines with ERROR or Traceback in the "
        f"processes' logs: {outcome.log_errors}.",
        "",
        "growth: end minus soak start; second half: end minus the sample nearest the "
        "middle of the soak (growth that stops early is caches and pools filling, growth "
        "that goes on is a leak); trend: least-squares slope over the soak.",
        "",
        "RSS samples (MiB; seconds since the soak started):",
        "",
        "| s | " + " | ".join(start.rss) + " |",
        "|---:|" + "---:|" * len(start.rss),
    ]
    for item in samples:
        cells = [mib(item.rss[name]) if name in item.rss else "" for name in start.rss]
        lines.append(f"| {item.at:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# --- main --------------------------------------------------------------------------


def log_errors(*processes: GatewayProcess) -> int:
    return sum(
        1
        for process in processes
        for line in process.log.splitlines()
        if "ERROR" in line or "Traceback" in line
    )


def soak_deployment(args: argparse.Namespace, workdir: Path) -> Outcome:
    """The whole soak, on a database of its own."""
    with postgres_database() as database_url:
        return soak_on(database_url, args, workdir)


def soak_on(database_url: str, args: argparse.Namespace, workdir: Path) -> Outcome:
    """Seed ``database_url``, start the deployment on it and soak it."""
    tag = secrets.token_hex(6)
    sink = Sink()
    sink.controller.start()
    settings = {
        "database_url": database_url,
        "redis_url": args.redis_url,
        "rate_limit_prefix": f"tollway-bench-soak:{tag}:",
        "job_queue_name": f"tollway-bench-soak-{tag}",
        "auto_migrate": "false",
    }
    gateway: GatewayProcess | None = None
    worker: WorkerProcess | None = None
    try:
        server_version = asyncio.run(postgres_version(database_url))
        log(f"seeding {args.conversations:,} conversations")
        seeded = asyncio.run(prepare(database_url, args.conversations))
        config = write_config(workdir, sink.port)
        worker = WorkerProcess(plugins=PLUGINS, config=config, **settings)
        gateway = GatewayProcess(
            plugins=PLUGINS,
            config=config,
            arguments=["--workers", str(GATEWAY_WORKERS)],
            run_jobs="false",
            **settings,
        )
        log("starting tollway worker and tollway serve --workers 2")
        worker.start()
        gateway.start()
        wait_for_workers(gateway)
        pids = processes(gateway, worker)
        log("processes: " + ", ".join(f"{name} {pid}" for name, pid in pids.items()))
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            traffic, samples = runner.run(soak(args, gateway.url, seeded, pids))
        now = processes(gateway, worker).values()
        replaced = [f"{name} (pid {pid})" for name, pid in pids.items() if pid not in now]
        posted = sum(n for status, n in traffic.statuses["write"].items() if status < 300)
        log(f"waiting for the deliveries of {posted:,} messages")
        delivery, drained = asyncio.run(wait_delivered(database_url, seeded.account_id))
        return Outcome(
            traffic,
            samples,
            posted,
            delivery,
            drained,
            sink.received,
            log_errors(gateway, worker),
            replaced,
            server_version,
        )
    finally:
        # stop() takes the process group along: granian's workers, should the
        # supervisor have died first.
        for process in (gateway, worker):
            if process is not None:
                process.stop()
        sink.controller.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run.begin()
    if problem := asyncio.run(redis_unreachable(args.redis_url)):
        log(f"bench: Redis at {args.redis_url} unreachable ({problem})")
        return 1
    with tempfile.TemporaryDirectory(prefix="tollway-bench-soak-") as workdir:
        try:
            outcome = soak_deployment(args, Path(workdir))
        except RuntimeError as error:
            log(f"bench: {error}")
            return 1
    publish(report(outcome, args, run), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
