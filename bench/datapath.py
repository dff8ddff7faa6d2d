"""The data path in process: what a product endpoint that reads or writes the database
costs per request, against the trivial keyed route of the same app.

No server and no network: requests go through ``httpx.ASGITransport`` into the app
``apps.chat_app`` builds (the chat product beside ``GET /v1/bench/ping``), one after
another on this process's event loop, so each figure is the CPU and database time of
one request with nothing queued in front of it. Per backend:

* ``SQLite``     - a temporary file (aiosqlite) and the in-memory rate limiter;
* ``PostgreSQL`` - a temporary database on ``TOLLWAY_TEST_POSTGRES_URL`` (asyncpg) and
  the in-memory limiter (this measures the database path, not the limiter); skipped
  with a note when the server does not answer.

The database is seeded like ``bench/chat.py`` (10,000 conversations of one account,
each with its contact and 3 messages). Cases:

* ``ping`` - ``GET /v1/bench/ping``, the pipeline's trivial route: the baseline;
* ``list`` - ``GET /v1/chat/conversations?limit=25``, the first page;
* ``post`` - ``POST /v1/chat/conversations/{id}/messages`` to a random conversation:
  the request (message row, which is also its outbox entry, the conversation's
  update and the webhook event, in one transaction) and the delivery it sets off in
  the background (claim, job, outcome), which runs on the same event loop between
  the requests and so counts in the figure;
* ``note`` - the same with ``"private": true``: a message nobody is sent, so the
  request's own cost alone;

Each case gets ``--warmup`` requests, then ``--rounds`` rounds of ``--requests``
sequential requests, the cases rotating between rounds; the report gives the median
milliseconds per request and the ratio to ``ping``. Targets (issue 13): list at most
1.5 ms and post at most 3 ms per request on both backends. ``--profile CASE`` runs one
case under pyinstrument instead and prints where the time goes.

Run with ``python bench/datapath.py``; the report goes to stdout and
bench/results/datapath.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import apps
import chat
import httpx
import uvloop
from common import Run, add_backends, add_output, argument_parser, log, publish

from tollway import Gateway, load_settings
from tollway.testing.backends import create_postgres_database, drop_postgres_database
from tollway.testing.clients import app_transport

LIST_TARGET_MS = 1.5
POST_TARGET_MS = 3.0
BASE_URL = "http://bench"


@dataclass
class Case:
    name: str
    method: str
    path: str
    body: bytes | None = None
    rounds: list[float] = field(default_factory=list)
    """Milliseconds per request, one figure per round."""
    cpu: list[float] = field(default_factory=list)
    """CPU milliseconds of this process (every thread) per request, one per round."""

    @property
    def median_ms(self) -> float:
        return statistics.median(self.rounds)

    @property
    def median_cpu_ms(self) -> float:
        return statistics.median(self.cpu)


@dataclass
class Backend:
    name: str
    database_url: str = ""
    skipped: str | None = None
    cases: list[Case] = field(default_factory=list)
    seeded: chat.Seeded | None = None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("datapath.py", __doc__)
    parser.add_argument("--requests", type=int, default=200, help="requests per round (200)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per case (5)")
    parser.add_argument("--warmup", type=int, default=100, help="warm-up requests (100)")
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=3)
    add_backends(parser)
    parser.add_argument("--profile", metavar="CASE", help="profile one case with pyinstrument")
    add_output(parser, "datapath")
    return parser.parse_args(argv)


def make_cases(seeded: chat.Seeded) -> list[Case]:
    rng = random.Random(7)
    first, last = seeded.first_conversation, seeded.last_conversation
    cases = [
        Case("ping", "GET", apps.PATH),
        Case("list", "GET", f"{chat.CHAT}/conversations?limit={chat.PAGE_SIZE}"),
        Case(
            "post",
            "POST",
            f"{chat.CHAT}/conversations/{{id}}/messages",
            b'{"content": "Thanks for waiting, we are on it."}',
        ),
        Case(
            "note",
            "POST",
            f"{chat.CHAT}/conversations/{{id}}/messages",
            b'{"content": "Customer called back.", "private": true}',
        ),
    ]
    # The post's conversation is drawn per request from these.
    _random_ids[:] = [rng.randint(first, last) for _ in range(4096)]
    return cases


_random_ids: list[int] = []


def gateway(database_url: str, workdir: Path) -> Gateway:
    environ = {"TOLLWAY_CONFIG": str(chat.write_config(workdir))}
    settings = load_settings(
        environ=environ,
        database_url=database_url,
        plugins=[apps.PRODUCT, "chat"],
        demo=False,
        auto_migrate=False,
    )
    extra = [*apps.plugins(), ("bench-accepting-channel", apps.AcceptingChannelPlugin())]
    return Gateway(settings, extra_plugins=extra)


@asynccontextmanager
async def client(database_url: str, workdir: Path, key: str) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        app_transport(gateway(database_url, workdir)) as transport,
        httpx.AsyncClient(
            transport=transport,
            base_url=BASE_URL,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        ) as http,
    ):
        yield http


async def send(http: httpx.AsyncClient, case: Case, n: int) -> None:
    path = case.path.replace("{id}", str(_random_ids[n % len(_random_ids)]))
    response = await http.request(case.method, path, content=case.body)
    if response.status_code >= 300:
        raise RuntimeError(f"{case.name}: HTTP {response.status_code} {response.text[:300]}")


async def run_case(http: httpx.AsyncClient, case: Case, requests: int) -> tuple[float, float]:
    """Wall and CPU milliseconds per request."""
    started, cpu = time.perf_counter(), time.process_time()
    for n in range(requests):
        await send(http, case, n)
    return (
        (time.perf_counter() - started) * 1000 / requests,
        (time.process_time() - cpu) * 1000 / requests,
    )


async def measure(backend: Backend, args: argparse.Namespace, workdir: Path) -> None:
    seeded = await chat.prepare(backend.database_url, args)
    backend.seeded = seeded
    backend.cases = make_cases(seeded)
    async with client(backend.database_url, workdir, seeded.key) as http:
        for case in backend.cases:
            await run_case(http, case, args.warmup)
        if args.profile:
            await profile(http, backend, args)
            return
        for round_ in range(args.rounds):
            shift = round_ % len(backend.cases)
            for case in backend.cases[shift:] + backend.cases[:shift]:
                wall, cpu = await run_case(http, case, args.requests)
                case.rounds.append(wall)
                case.cpu.append(cpu)
            log(
                f"{backend.name} round {round_ + 1}: "
                + ", ".join(f"{case.name} {case.rounds[-1]:.2f} ms" for case in backend.cases)
            )


async def profile(http: httpx.AsyncClient, backend: Backend, args: argparse.Namespace) -> None:
    from pyinstrument import Profiler

    case = next(case for case in backend.cases if case.name == args.profile)
    profiler = Profiler(interval=0.0001, async_mode=os.environ.get("PROFILE_ASYNC", "enabled"))
    with profiler:
        await run_case(http, case, args.requests * args.rounds)
    print(profiler.output_text(unicode=True, color=False, show_all=False))


async def run_backends(args: argparse.Namespace) -> list[Backend]:
    backends: list[Backend] = []
    with tempfile.TemporaryDirectory(prefix="tollway-datapath-") as tmp:
        workdir = Path(tmp)
        if "sqlite" in args.backends:
            backend = Backend("SQLite", f"sqlite+aiosqlite:///{workdir / 'bench.db'}")
            await measure(backend, args, workdir)
            backends.append(backend)
        if "postgresql" in args.backends:
            backend = Backend("PostgreSQL")
            try:
                url = await create_postgres_database()
            except OSError as error:
                backend.skipped = f"PostgreSQL did not answer: {error}"
            else:
                backend.database_url = url
                try:
                    await measure(backend, args, workdir)
                finally:
                    await drop_postgres_database(url)
            backends.append(backend)
    return backends


def versions() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        **{name: version(name) for name in ("litestar", "sqlalchemy", "aiosqlite", "asyncpg")},
    }


def verdict(measured: float, target: float) -> str:
    return f"{'PASS' if measured <= target else 'MISS'} ({measured:.2f} ms, target ≤ {target} ms)"


def report(backends: list[Backend], args: argparse.Namespace, run: Run) -> str:
    lines = [
        "# Data path in process",
        "",
        run.headline("python bench/datapath.py")
        + f" ({args.rounds} rounds of {args.requests} sequential requests per case after "
        f"{args.warmup} warm-up requests; {args.conversations:,} conversations).",
        "",
        run.machine(),
        "- versions: " + ", ".join(f"{name} {value}" for name, value in versions().items()),
        "",
        "| backend | case | ms per request (median) | rounds | ratio to ping | CPU ms |",
        "|---|---|---:|---|---:|---:|",
    ]
    verdicts: list[str] = []
    for backend in backends:
        if backend.skipped:
            lines.append(f"| {backend.name} | skipped: {backend.skipped} | | | | |")
            continue
        ping = backend.cases[0].median_ms
        for case in backend.cases:
            rounds = ", ".join(f"{value:.2f}" for value in case.rounds)
            lines.append(
                f"| {backend.name} | {case.name} | {case.median_ms:.2f} | {rounds} "
                f"| {case.median_ms / ping:.1f} | {case.median_cpu_ms:.2f} |"
            )
        by_name = {case.name: case for case in backend.cases}
        verdicts.append(
            f"- {backend.name} list ≤ {LIST_TARGET_MS} ms: "
            + verdict(by_name["list"].median_ms, LIST_TARGET_MS)
        )
        verdicts.append(
            f"- {backend.name} post ≤ {POST_TARGET_MS} ms, its delivery included: "
            + verdict(by_name["post"].median_ms, POST_TARGET_MS)
        )
        verdicts.append(
            f"- {backend.name} post ≤ {POST_TARGET_MS} ms, the request alone (note): "
            + verdict(by_name["note"].median_ms, POST_TARGET_MS)
        )
    return "\n".join([*lines, "", "Targets:", "", *verdicts, ""])


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run.begin()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    backends = uvloop.run(run_backends(args))
    if args.profile:
        return 0
    document = report(backends, args, run)
    publish(document, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
