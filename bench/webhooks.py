"""Webhook delivery: event-to-receipt latency and dispatcher throughput, in one run.

A gateway runs in this process (``await gateway.migrate(); await gateway.start()``,
the engine and its dispatcher are in-process) with one in-code plugin that registers
the event ``bench.event``. One account has one endpoint: a loopback HTTPS receiver in a
**separate process** (``tollway.webhooks.testing.WebhookTestReceiver``, which verifies
every delivery's signature, freshness and uniqueness with the public
``tollway.webhooks.WebhookReceiver``), on a certificate made by ``make_certificate``
in a temporary directory and trusted through ``webhooks_ca_file``. A separate process,
because on a small machine a receiver sharing the gateway's event loop would take its
TLS handshakes' and verifications' CPU from the dispatcher; the receiver reports each
verified delivery's arrival (``time.monotonic()``, the same system-wide clock in both
processes) over a pipe.

Scenarios, each on both databases (SQLite by default; PostgreSQL too when the test
server answers: a temporary database, created and dropped like ``tollway.testing``):

* ``one-at-a-time`` - one event per transaction, the next only after the receipt: the
  latency of an idle dispatcher woken by the commit.
* ``burst NxM``     - ``--events`` events committed as fast as possible, ``M`` per
  transaction (``--per-transaction``, default 100, and 1): throughput is events over
  the time from the first transaction's start to the last receipt.
* ``paced``         - ``--rate`` events/s (default 50 and 200) for ``--seconds`` s,
  one per transaction, on an absolute schedule: latency under steady load.
* ``backlog``       - ``--events`` events committed while the dispatcher is stopped,
  then it starts: the dispatcher's own rate, with no emitting in the process. Its
  throughput and latencies count from the dispatcher's start.

Latency is from the commit of the emitting transaction (the moment its ``async with``
block exits) to the receiver holding the verified delivery. Settings are the
defaults (``webhooks_poll_interval`` 1 s: a commit wakes the dispatcher at once; the
poll is the safety net) apart from ``webhooks_allow_private_addresses`` (loopback) and
``webhooks_ca_file``. The job queue is the default in-process one, with its default
concurrency, subclassed only to time each job (``--concurrency`` changes it).

The target (issue 13): one process dispatches at least ``TARGET_RATE`` deliveries/s
to a keep-alive receiver, judged on the backlog scenario and printed as PASS/MISS; the
exit status is 0 whatever the verdict, 1 only if the run could not measure. Run with
``python bench/webhooks.py`` (``--help`` for the options); the report goes to stdout
and bench/results/webhooks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import os
import platform
import secrets
import shutil
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import msgspec
from common import (
    BenchError,
    Run,
    Unreachable,
    add_backends,
    add_output,
    argument_parser,
    at_least_one,
    log,
    postgres_database,
    postgres_version,
    publish,
    quantile,
)
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy import func, select

from tollway import Gateway, hookimpl, load_settings
from tollway.jobs import InProcessJobQueue, JobQueue
from tollway.settings import Settings
from tollway.webhooks import Envelope, sign_payload
from tollway.webhooks.dispatcher import BATCH_SIZE
from tollway.webhooks.models import WebhookDelivery
from tollway.webhooks.signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER
from tollway.webhooks.testing import WebhookTestReceiver, make_certificate
from tollway.webhooks.transport import Connections, post, ssl_context

EVENT = "bench.event"
TARGET_RATE = 500.0
"""Deliveries/s one process must dispatch (the backlog scenario)."""
WARMUP_EVENTS = 20
MICRO_ROUNDS = 200
WAIT_LIMIT = 120.0
"""Seconds a scenario may take to deliver everything before the run gives up."""
DEFAULT_CONCURRENCY: int = inspect.signature(InProcessJobQueue).parameters["concurrency"].default
DEFAULTS = Settings()

EMITTING: ContextVar[bool] = ContextVar("bench_emitting", default=False)
"""True while the bench's own emitting transactions run: their statements are the
emit side's, every other statement the dispatcher's."""


# --- the receiver process ----------------------------------------------------------


async def serve_receiver(certificate: Path, key: Path) -> None:
    """``--serve-receiver``: a WebhookTestReceiver on a free loopback port.

    Protocol on stdout: ``port <n>``, then ``r <event id or -> <monotonic>`` for every
    request once verified (``-``: the delivery failed verification), ``cpu <seconds>``
    when asked. On stdin: ``trust <secret>``, ``cpu``, ``quit``.
    """
    receiver = WebhookTestReceiver(certificate, key)
    await receiver.start()
    out = sys.stdout
    out.write(f"port {receiver.port}\n")
    out.flush()

    async def report() -> None:
        seen = 0
        while True:
            await receiver.wait_for_requests(seen + 1, within=10**7)
            batch = receiver.requests[seen:]
            seen += len(batch)
            out.write("".join(f"r {item.event_id or '-'} {item.at:.6f}\n" for item in batch))
            out.flush()

    reporter = asyncio.create_task(report())
    try:
        while True:
            line = (await asyncio.to_thread(sys.stdin.readline)).split()
            if not line or line[0] == "quit":
                return
            if line[0] == "trust":
                receiver.trust(line[1])
            elif line[0] == "cpu":
                times = os.times()
                out.write(f"cpu {times.user + times.system:.4f}\n")
                out.flush()
    finally:
        reporter.cancel()
        await receiver.stop()


class ReceiverProcess:
    """The bench's side of the receiver process: receipts by event id."""

    def __init__(self, certificate: Path, key: Path) -> None:
        self.certificate = certificate
        self.key = key
        self.port = 0
        self.receipts: dict[str, float] = {}
        self.rejected = 0
        self.repeated = 0
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._arrived = asyncio.Event()
        self._cpu: asyncio.Future[float] | None = None

    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/hooks"

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--serve-receiver",
            str(self.certificate),
            str(self.key),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert self._process.stdout is not None
        first = (await asyncio.wait_for(self._process.stdout.readline(), 30)).split()
        if first[:1] != [b"port"]:
            raise BenchError(f"the receiver process did not start: {first!r}")
        self.port = int(first[1])
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self._process is not None
        assert self._process.stdout is not None
        while line := await self._process.stdout.readline():
            kind, *rest = line.decode().split()
            if kind == "r":
                event_id, at = rest
                if event_id == "-":
                    self.rejected += 1
                elif event_id in self.receipts:
                    self.repeated += 1
                else:
                    self.receipts[event_id] = float(at)
                self._arrived.set()
            elif kind == "cpu" and self._cpu is not None:
                self._cpu.set_result(float(rest[0]))

    async def _send(self, line: str) -> None:
        assert self._process is not None
        assert self._process.stdin is not None
        self._process.stdin.write(line.encode() + b"\n")
        await self._process.stdin.drain()

    async def trust(self, secret: str) -> None:
        await self._send(f"trust {secret}")

    async def cpu_seconds(self) -> float:
        self._cpu = asyncio.get_running_loop().create_future()
        await self._send("cpu")
        return await asyncio.wait_for(self._cpu, 10)

    async def wait_for(self, event_ids: Sequence[str], within: float = WAIT_LIMIT) -> None:
        """Until every one of ``event_ids`` was received and verified."""
        try:
            async with asyncio.timeout(within):
                while True:
                    self._arrived.clear()
                    if self.rejected:
                        raise BenchError(f"the receiver rejected {self.rejected} deliveries")
                    if all(event_id in self.receipts for event_id in event_ids):
                        return
                    await self._arrived.wait()
        except TimeoutError:
            missing = sum(event_id not in self.receipts for event_id in event_ids)
            raise BenchError(f"{missing} of {len(event_ids)} events not received") from None

    async def stop(self) -> None:
        if self._process is None:
            return
        with contextlib.suppress(OSError, ConnectionError):
            await self._send("quit")
        try:
            await asyncio.wait_for(self._process.wait(), 10)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)


# --- the gateway side --------------------------------------------------------------


@dataclass
class Job:
    delivery_id: str
    enqueued: float
    started: float = 0.0
    finished: float = 0.0


class TimedJobQueue(InProcessJobQueue):
    """The default in-process queue, timing each ``webhooks.deliver`` job."""

    def __init__(self, concurrency: int) -> None:
        super().__init__(concurrency)
        self.jobs: dict[str, Job] = {}
        self.in_flight = 0
        self.peak = 0
        self.unfinished = 0

    def register(self, name: str, function: Callable[..., Awaitable[None]]) -> None:
        async def timed(**kwargs: Any) -> None:
            job = self.jobs.get(kwargs.get("delivery_id", ""))
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            if job is not None:
                job.started = time.monotonic()
            try:
                await function(**kwargs)
            finally:
                self.in_flight -= 1
                self.unfinished -= 1
                if job is not None:
                    job.finished = time.monotonic()

        super().register(name, timed)

    async def enqueue(self, name: str, /, **kwargs: Any) -> None:
        delivery_id = kwargs.get("delivery_id")
        if delivery_id is not None:
            self.jobs[delivery_id] = Job(delivery_id, time.monotonic())
        self.unfinished += 1
        await super().enqueue(name, **kwargs)


class BenchPlugin:
    """Registers the event, and supplies the timed job queue."""

    def __init__(self, jobs: TimedJobQueue) -> None:
        self.jobs = jobs

    @hookimpl
    def tollway_register_events(self, register: Callable[[str, str], None]) -> None:
        register(EVENT, "An event emitted by bench/webhooks.py")

    @hookimpl
    def tollway_job_queue(self, gateway: Gateway) -> JobQueue:
        return self.jobs


@dataclass
class Counters:
    """Statements and commits, split between the emit side and the dispatcher."""

    statements: dict[bool, int] = field(default_factory=lambda: {True: 0, False: 0})
    commits: dict[bool, int] = field(default_factory=lambda: {True: 0, False: 0})
    claims: int = 0
    """Dispatcher passes that found work (the claiming ``UPDATE ... RETURNING``)."""

    def snapshot(self) -> tuple[int, int, int, int, int]:
        return (
            self.statements[True],
            self.statements[False],
            self.commits[True],
            self.commits[False],
            self.claims,
        )


@dataclass
class Bench:
    gateway: Gateway
    jobs: TimedJobQueue
    receiver: ReceiverProcess
    account: int
    counters: Counters

    async def emit(self, count: int) -> tuple[list[str], float]:
        """``count`` events in one transaction; their ids and the commit time."""
        token = EMITTING.set(True)
        try:
            async with self.gateway.database.transaction() as session:
                ids = [
                    await self.gateway.webhooks.emit(session, self.account, EVENT, {"n": index})
                    for index in range(count)
                ]
        finally:
            EMITTING.reset(token)
        return ids, time.monotonic()

    async def settled(self) -> None:
        """Until every job finished and no delivery is pending."""
        async with asyncio.timeout(WAIT_LIMIT):
            while True:
                if self.jobs.unfinished == 0:
                    async with self.gateway.database.sessions() as session:
                        pending = await session.scalar(
                            select(func.count())
                            .select_from(WebhookDelivery)
                            .where(WebhookDelivery.status == "pending")
                        )
                    if not pending:
                        return
                await asyncio.sleep(0.02)


def count_statements(gateway: Gateway, counters: Counters) -> None:
    engine = gateway.database.engine.sync_engine

    def before_cursor_execute(*args: Any) -> None:
        statement: str = args[2]
        counters.statements[EMITTING.get()] += 1
        if statement.startswith("UPDATE webhook_deliveries") and "RETURNING" in statement:
            counters.claims += 1

    def commit(connection: Any) -> None:
        counters.commits[EMITTING.get()] += 1

    sqlalchemy_event.listen(engine, "before_cursor_execute", before_cursor_execute)
    sqlalchemy_event.listen(engine, "commit", commit)


# --- scenarios ---------------------------------------------------------------------


@dataclass
class Result:
    name: str
    events: int
    emit_seconds: float
    total_seconds: float
    latencies: list[float]
    claim_wait: list[float]
    """Commit to the job being enqueued (the dispatcher's claim)."""
    queue_wait: list[float]
    """Enqueued to started (job queue concurrency)."""
    to_receipt: list[float]
    """Job start to receipt: a pooled (or new) connection, the request."""
    record: list[float]
    """Receipt to job end: the response, then the outcome's transaction."""
    attempt_ms: float
    """Mean ``last_latency_ms`` the dispatcher recorded (the HTTPS attempt)."""
    emit_statements: float
    emit_commits: float
    dispatch_statements: float
    dispatch_commits: float
    claims: int
    peak_jobs: int
    gateway_cpu: float
    receiver_cpu: float

    @property
    def emit_rate(self) -> float | None:
        """``None`` when the events were committed before the measurement."""
        return self.events / self.emit_seconds if self.emit_seconds > 0 else None

    @property
    def throughput(self) -> float:
        return self.events / self.total_seconds


Plan = Callable[[Bench], Awaitable[tuple[dict[str, float], float]]]
"""Emits a scenario's events; returns each event's commit time and the start."""


def one_at_a_time(count: int) -> Plan:
    async def plan(bench: Bench) -> tuple[dict[str, float], float]:
        commits: dict[str, float] = {}
        start = time.monotonic()
        for _ in range(count):
            ids, committed = await bench.emit(1)
            commits[ids[0]] = committed
            await bench.receiver.wait_for(ids)
        return commits, start

    return plan


def burst(events: int, per_transaction: int) -> Plan:
    async def plan(bench: Bench) -> tuple[dict[str, float], float]:
        commits: dict[str, float] = {}
        start = time.monotonic()
        for first in range(0, events, per_transaction):
            ids, committed = await bench.emit(min(per_transaction, events - first))
            commits.update(dict.fromkeys(ids, committed))
        return commits, start

    return plan


def paced(rate: float, seconds: float) -> Plan:
    async def plan(bench: Bench) -> tuple[dict[str, float], float]:
        commits: dict[str, float] = {}
        start = time.monotonic()
        for index in range(round(rate * seconds)):
            delay = start + index / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            ids, committed = await bench.emit(1)
            commits[ids[0]] = committed
        return commits, start

    return plan


async def run_scenario(
    bench: Bench, name: str, plan: Plan, prepare: Prepare | None = None
) -> Result:
    await bench.settled()
    if prepare is not None:
        await prepare(bench)
    before = bench.counters.snapshot()
    receiver_cpu = await bench.receiver.cpu_seconds()
    cpu = time.process_time()
    commits, start = await plan(bench)
    emitted = max(commits.values())
    ids = list(commits)
    await bench.receiver.wait_for(ids)
    receipts = [bench.receiver.receipts[event_id] for event_id in ids]
    total = max(receipts) - start
    gateway_cpu = (time.process_time() - cpu) / total
    receiver_cpu = (await bench.receiver.cpu_seconds() - receiver_cpu) / total
    await bench.settled()
    after = bench.counters.snapshot()
    async with bench.gateway.database.sessions() as session:
        rows = []
        for first in range(0, len(ids), 500):
            rows += list(
                await session.execute(
                    select(
                        WebhookDelivery.id,
                        WebhookDelivery.event_id,
                        WebhookDelivery.last_latency_ms,
                        WebhookDelivery.attempts,
                    ).where(WebhookDelivery.event_id.in_(ids[first : first + 500]))
                )
            )
    if len(rows) != len(ids) or any(attempts != 1 for *_, attempts in rows):
        raise BenchError(f"{name}: expected one delivery of one attempt per event")
    claim_wait, queue_wait, to_receipt, record = [], [], [], []
    for delivery_id, event_id, _, _ in rows:
        job = bench.jobs.jobs[delivery_id]
        received = bench.receiver.receipts[event_id]
        claim_wait.append(job.enqueued - commits[event_id])
        queue_wait.append(job.started - job.enqueued)
        to_receipt.append(received - job.started)
        record.append(job.finished - received)
    events = len(ids)
    delta = [later - earlier for later, earlier in zip(after, before, strict=True)]
    return Result(
        name=name,
        events=events,
        emit_seconds=emitted - start,
        total_seconds=total,
        latencies=[bench.receiver.receipts[event_id] - commits[event_id] for event_id in ids],
        claim_wait=claim_wait,
        queue_wait=queue_wait,
        to_receipt=to_receipt,
        record=record,
        attempt_ms=statistics.fmean(latency or 0 for _, _, latency, _ in rows),
        emit_statements=delta[0] / events,
        dispatch_statements=delta[1] / events,
        emit_commits=delta[2] / events,
        dispatch_commits=delta[3] / events,
        claims=delta[4],
        peak_jobs=bench.jobs.peak,
        gateway_cpu=gateway_cpu,
        receiver_cpu=receiver_cpu,
    )


@dataclass
class Micro:
    handshake_ms: float
    post_ms: float
    pooled_ms: float


async def micro(receiver: ReceiverProcess, secret: str, ca_file: str) -> Micro:
    """One TLS handshake, one ``post()`` on a new connection, and one
    ``Connections.post()`` on a kept-alive connection (what each attempt does)."""
    context = ssl_context(ca_file)
    started = time.perf_counter()
    for _ in range(MICRO_ROUNDS):
        _, writer = await asyncio.open_connection(
            "127.0.0.1", receiver.port, ssl=context, server_hostname="127.0.0.1"
        )
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
    handshake = (time.perf_counter() - started) / MICRO_ROUNDS
    connections = Connections(ca_file=ca_file, allow_private=True)
    alone, pooled = partial(post, ca_file=ca_file, allow_private=True), connections.post
    ids = []
    elapsed = {alone: 0.0, pooled: 0.0}
    try:
        for send in (alone, pooled):
            for index in range(MICRO_ROUNDS):
                event_id = f"evt_micro{secrets.token_hex(8)}"
                ids.append(event_id)
                body = msgspec.json.encode(
                    Envelope(event_id, EVENT, datetime.now(UTC), {"n": index})
                )
                headers = {
                    "Content-Type": "application/json",
                    SIGNATURE_HEADER: sign_payload(secret, body),
                    EVENT_HEADER: EVENT,
                    DELIVERY_HEADER: f"dlv_micro{index}",
                }
                started = time.perf_counter()
                attempt = await send(receiver.url(), body, headers, time_limit=10)
                elapsed[send] += time.perf_counter() - started
                if not attempt.succeeded:
                    raise BenchError(f"micro post failed: {attempt}")
    finally:
        await connections.close()
    await receiver.wait_for(ids)
    return Micro(
        handshake * 1e3,
        elapsed[alone] / MICRO_ROUNDS * 1e3,
        elapsed[pooled] / MICRO_ROUNDS * 1e3,
    )


# --- one backend -------------------------------------------------------------------


@dataclass
class BackendRun:
    name: str
    results: list[Result] = field(default_factory=list)
    micro: Micro | None = None
    server: str = ""
    skipped: str | None = None


class Backlog:
    """The backlog scenario: ``prepare`` commits the events with the dispatcher stopped
    (before the measurement), the plan starts it."""

    def __init__(self, events: int) -> None:
        self.events = events
        self.ids: list[str] = []

    async def prepare(self, bench: Bench) -> None:
        await bench.gateway.webhooks.stop()
        self.ids = []
        for first in range(0, self.events, BATCH_SIZE):
            emitted, _ = await bench.emit(min(BATCH_SIZE, self.events - first))
            self.ids += emitted

    async def __call__(self, bench: Bench) -> tuple[dict[str, float], float]:
        start = time.monotonic()
        await bench.gateway.webhooks.start()
        return dict.fromkeys(self.ids, start), start


Prepare = Callable[[Bench], Awaitable[None]]
"""Work a scenario needs done before its measurement starts."""


def scenarios(args: argparse.Namespace) -> list[tuple[str, Plan, Prepare | None]]:
    plans: list[tuple[str, Plan, Prepare | None]] = [
        (f"one-at-a-time ({args.sequential})", one_at_a_time(args.sequential), None),
    ]
    for per in dict.fromkeys((args.per_transaction, 1)):
        label = f"burst {args.events // per}x{per}" if args.events % per == 0 else "burst"
        plans.append((label, burst(args.events, per), None))
    for rate in args.rate:
        plans.append((f"paced {rate:g}/s x {args.seconds:g} s", paced(rate, args.seconds), None))
    backlog = Backlog(args.events)
    plans.append((f"backlog {args.events}", backlog, backlog.prepare))
    return plans


async def run_backend(
    name: str,
    database_url: str,
    certificate: tuple[Path, Path],
    args: argparse.Namespace,
    *,
    with_micro: bool,
) -> BackendRun:
    run = BackendRun(name)
    jobs = TimedJobQueue(args.concurrency)
    settings = load_settings(
        environ={},
        database_url=database_url,
        plugins=[],
        demo=False,
        webhooks_allow_private_addresses=True,
        webhooks_ca_file=str(certificate[0]),
    )
    gateway = Gateway(settings, extra_plugins=[("bench", BenchPlugin(jobs))])
    if gateway.jobs is not jobs:
        raise BenchError("another plugin supplies the job queue; the timings would be lost")
    receiver = ReceiverProcess(*certificate)
    counters = Counters()
    started = False
    try:
        await receiver.start()
        await gateway.migrate()
        await gateway.start()
        started = True
        count_statements(gateway, counters)
        if not gateway.database.is_sqlite:
            run.server = (await postgres_version(database_url)).split()[0]
        account = await gateway.accounts.create_account("bench")
        _, secret = await gateway.webhooks.register_endpoint(account, receiver.url(), [EVENT])
        await receiver.trust(secret)
        bench = Bench(gateway, jobs, receiver, account, counters)
        log(f"{name}: warming up ({WARMUP_EVENTS} events)")
        await run_scenario(bench, "warm-up", burst(WARMUP_EVENTS, 1))
        if with_micro:
            log(f"{name}: TLS handshake and post() alone, {MICRO_ROUNDS} each")
            run.micro = await micro(receiver, secret, str(certificate[0]))
        for label, plan, prepare in scenarios(args):
            jobs.peak = 0
            log(f"{name}: {label}")
            result = await run_scenario(bench, label, plan, prepare)
            run.results.append(result)
            log(
                f"  {result.events} events, {result.throughput:,.0f}/s delivered, p50 "
                f"{quantile(result.latencies, 50) * 1e3:,.0f} ms, max "
                f"{max(result.latencies) * 1e3:,.0f} ms"
            )
        if receiver.repeated:
            raise BenchError(f"the receiver got {receiver.repeated} repeated deliveries")
    finally:
        if started:
            await gateway.stop()
        else:
            await gateway.database.dispose()
        await receiver.stop()
    return run


def run_all(args: argparse.Namespace, workdir: Path) -> list[BackendRun]:
    """Every backend asked for, each on an event loop of its own."""
    certificate = make_certificate(workdir)
    runs: list[BackendRun] = []
    if "sqlite" in args.backends:
        url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
        runs.append(asyncio.run(run_backend("SQLite", url, certificate, args, with_micro=True)))
    if "postgresql" in args.backends:
        try:
            with postgres_database() as url:
                measured = run_backend("PostgreSQL", url, certificate, args, with_micro=not runs)
                runs.append(asyncio.run(measured))
        except Unreachable as error:
            log(f"{error}; skipped")
            runs.append(BackendRun("PostgreSQL", skipped=str(error)))
    return runs


# --- reporting ---------------------------------------------------------------------


def _version(name: str) -> str:
    try:
        return version(name)
    except Exception:
        return "?"


def _ms(values: Sequence[float], q: int) -> str:
    return f"{quantile(values, q) * 1e3:,.1f}"


def verdicts(runs: list[BackendRun]) -> list[str]:
    """The target's PASS/MISS per database, on the backlog scenario."""
    lines = []
    for run in runs:
        for result in run.results:
            if result.name.startswith("backlog"):
                rate = result.throughput
                verdict = "PASS" if rate >= TARGET_RATE else "MISS"
                cpu_ms = result.gateway_cpu * result.total_seconds / result.events * 1e3
                lines.append(
                    f"- {run.name}: one process dispatches {rate:,.0f} deliveries/s "
                    f"(target >= {TARGET_RATE:,.0f}): **{verdict}**; {cpu_ms:.2f} ms of "
                    f"gateway CPU per delivery, {1e3 / cpu_ms:,.0f}/s if it had a core "
                    "to itself"
                )
    return lines


def report(runs: list[BackendRun], args: argparse.Namespace, header: Run) -> str:
    servers = [f"PostgreSQL {run.server}" for run in runs if run.server]
    lines = [
        "# Webhook delivery",
        "",
        header.headline("bench/webhooks.py") + " (absolute numbers move between runs).",
        "",
        header.machine() + f"; whole run {header.elapsed:.0f} s",
        f"- options: `{' '.join(sys.argv[1:]) or '(the defaults)'}`",
        f"- Python {platform.python_version()}, SQLAlchemy {_version('sqlalchemy')}, "
        f"aiosqlite {_version('aiosqlite')}, asyncpg {_version('asyncpg')}, httpcore "
        f"{_version('httpcore')}" + "".join(f", {server}" for server in servers),
        "- gateway in this process (asyncio event loop), receiver "
        "(`WebhookTestReceiver`, verifying every delivery) in a separate process, "
        "HTTPS on 127.0.0.1 with a self-signed P-256 certificate",
        f"- defaults: `webhooks_poll_interval` {DEFAULTS.webhooks_poll_interval:g} s "
        f"(a commit wakes the dispatcher at once), `webhooks_timeout` "
        f"{DEFAULTS.webhooks_timeout:g} s, claim batch {BATCH_SIZE} per pass, job queue "
        f"concurrency {args.concurrency}"
        + ("" if args.concurrency == DEFAULT_CONCURRENCY else " (not the default)"),
        "- latency: commit of the emitting transaction to the verified receipt; "
        "delivered/s: events over first transaction's start to last receipt",
    ]
    skipped = [run for run in runs if run.skipped]
    for run in skipped:
        lines.append(f"- {run.name}: skipped, {run.skipped}")
    lines += [
        "",
        "| database | scenario | events | emitted/s | delivered/s | p50 (ms) | p95 (ms) "
        "| p99 (ms) | max (ms) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    done = [run for run in runs if not run.skipped]
    for run in done:
        for result in run.results:
            lines.append(
                f"| {run.name} | {result.name} | {result.events:,} "
                f"| {'-' if result.emit_rate is None else f'{result.emit_rate:,.0f}'} "
                f"| {result.throughput:,.0f} | {_ms(result.latencies, 50)} "
                f"| {_ms(result.latencies, 95)} | {_ms(result.latencies, 99)} "
                f"| {max(result.latencies) * 1e3:,.1f} |"
            )
    lines += ["", *verdicts(done)]
    lines += [
        "",
        "Where an event's time goes (p50 / p95, ms): *claim* is commit to the job being "
        "enqueued (the dispatcher's pass), *queue* enqueued to the job starting (job "
        "queue concurrency), *send* job start to the verified receipt (a pooled "
        "connection, or connect and TLS handshake, then the request), *record* receipt "
        "to job end (response, then the outcome's `UPDATE`). *attempt* is the mean "
        "`last_latency_ms` the dispatcher stored. Statements and commits are per event, "
        "emit side / dispatch side; passes are the dispatcher's claiming `UPDATE`s "
        "that found work; CPU is the process's CPU time (all threads: aiosqlite runs each "
        "connection in a thread) over the scenario's wall time.",
        "",
        "| database | scenario | claim | queue | send | record | attempt (ms) "
        "| statements | commits | passes | peak jobs | gateway CPU | receiver CPU |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in done:
        for result in run.results:
            cells = [
                f"{_ms(values, 50)} / {_ms(values, 95)}"
                for values in (
                    result.claim_wait,
                    result.queue_wait,
                    result.to_receipt,
                    result.record,
                )
            ]
            lines.append(
                f"| {run.name} | {result.name} | "
                + " | ".join(cells)
                + f" | {result.attempt_ms:.1f} | {result.emit_statements:.1f} / "
                f"{result.dispatch_statements:.1f} | {result.emit_commits:.2f} / "
                f"{result.dispatch_commits:.2f} | {result.claims} | {result.peak_jobs} "
                f"| {result.gateway_cpu:.0%} | {result.receiver_cpu:.0%} |"
            )
    micros = [run.micro for run in done if run.micro is not None]
    if micros:
        measured = micros[0]
        lines += [
            "",
            f"Alone, sequentially, {MICRO_ROUNDS} each against the same receiver: a TLS "
            f"connection (TCP connect and handshake) {measured.handshake_ms:.2f} ms; one "
            f"`tollway.webhooks.transport.post()` (a new connection: connect, handshake, "
            f"request, response) {measured.post_ms:.2f} ms; one `Connections.post()` on "
            f"a kept-alive connection (what the dispatcher does) {measured.pooled_ms:.2f} ms.",
        ]
    return "\n".join(lines) + "\n"


# --- main --------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("webhooks.py", __doc__)
    parser.add_argument("--events", type=int, default=1000, help="events per burst (1000)")
    parser.add_argument(
        "--per-transaction",
        type=int,
        default=100,
        help="events per transaction in the first burst (100); a second burst uses 1",
    )
    parser.add_argument(
        "--rate",
        type=lambda text: [float(item) for item in text.split(",")],
        default=[50.0, 200.0],
        help="paced events/s, comma-separated: one paced scenario each (50,200)",
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="paced seconds (5)")
    parser.add_argument("--sequential", type=int, default=50, help="events sent one at a time (50)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        help=f"job queue concurrency ({DEFAULT_CONCURRENCY}, the in-process queue's default)",
    )
    add_backends(
        parser, "; PostgreSQL is skipped with a note when TOLLWAY_TEST_POSTGRES_URL does not answer"
    )
    add_output(parser, "webhooks")
    parser.add_argument(
        "--serve-receiver", nargs=2, metavar=("CERT", "KEY"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    at_least_one(parser, args, "events", "per_transaction", "sequential", "concurrency")
    if min(args.rate) <= 0 or args.seconds <= 0:
        parser.error("--rate and --seconds must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_receiver:
        asyncio.run(serve_receiver(*map(Path, args.serve_receiver)))
        return 0
    header = Run.begin()
    workdir = Path(tempfile.mkdtemp(prefix="tollway-bench-webhooks-"))
    try:
        runs = run_all(args, workdir)
    except BenchError as error:
        log(f"bench: {error}")
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    publish(report(runs, args, header), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
