"""Chat product: listing conversations and posting messages over HTTP, on both
deployment profiles, each against the trivial-route baseline of the same server.

One granian server (ASGI, 1 worker, ``apps:chat_app``) per backend serves the chat
product and the gateway overhead bench's trivial route, ``GET /v1/bench/ping``, on the
same database and rate limiter:

* ``SQLite``     - a temporary SQLite file and the in-memory rate limiter;
* ``PostgreSQL`` - a temporary database on ``TOLLWAY_TEST_POSTGRES_URL`` (created and
  dropped like the test suite's) and the Redis rate limiter; skipped with a note when
  either does not answer.

Before the server starts, one account gets ``--conversations`` conversations (10,000),
each with its own contact and ``--messages`` messages (3), in two live_chat inboxes
with ten agents, inserted in bulk. Cases, all at ``--connections`` (32):

* ``baseline``      - ``GET /v1/bench/ping``, the pipeline's trivial route;
* ``list``          - ``GET /v1/chat/conversations?limit=25``, the first page;
* ``list-page-200`` - the same at ``page=200`` (offset 4,975);
* ``list-open``     - ``?status=open&limit=25`` (40 % of the conversations are open);
* ``post``          - ``POST /v1/chat/conversations/{id}/messages``, each request to a
  random seeded conversation (a wrk Lua script picks the id).

The chat ``business`` plan is lifted to 10^9 requests/day in the server's
``TOLLWAY_CONFIG``, so nothing is refused: any non-2xx response fails the run. Posted
messages are delivered by the chat plugin's job through a channel that accepts every
send (``apps.AcceptingChannel``, as live_chat with the contact's stream open); after
each post measurement the run waits until every message is delivered.

Each server gets a warm-up of every case, then the cases are measured in turns (the
order rotates every round) and medians reported, with throughput as a ratio of the
same backend's baseline. The target, p99 < 25 ms at 32 connections on PostgreSQL,
prints PASS/MISS; the exit status is 0 whatever the verdict, 1 only if the run is
invalid. Run with ``python bench/chat.py`` (``--help`` for the options); the report
goes to stdout and bench/results/chat.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import secrets
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any

import apps
from common import (
    BenchError,
    Measured,
    Run,
    Unreachable,
    add_backends,
    add_output,
    add_redis_url,
    argument_parser,
    at_least_one,
    log,
    per_round_table,
    postgres_database,
    postgres_version,
    publish,
    redis_drop,
    rotating,
)
from loadgen import LoadError, Measurement, run_wrk, run_wrk_script, wrk_path
from servers import Server, ServerError, running
from sqlalchemy import func, insert, select, text

from tollway import Gateway, load_settings
from tollway.db import Database
from tollway.testing import redis_unreachable
from tollway_chat.models import Agent, Contact, Conversation, Inbox, Message

WARMUP_SECONDS = 3
TARGET = "apps:chat_app"
CHAT = "/v1/chat"
PLAN = "business"
LIMIT = 10**9
"""The chat plan's requests/day in the run's config: nothing is refused."""
P99_TARGET_MS = 25.0
REQUEST_TIMEOUT = 10.0
"""wrk's per-request timeout (s): a slow response is measured, not a socket error."""
PAGE_SIZE = 25
DEEP_PAGE = 200
AGENTS = 10
INBOXES = 2
STATUSES = ["open"] * 4 + ["pending"] * 2 + ["resolved"] * 3 + ["snoozed"]
"""Conversation ``i`` gets ``STATUSES[i % 10]``."""
ACTIVITY_SPAN = timedelta(days=90)
DELIVERY_WAIT = 300.0
"""Seconds the delivery backlog of a post measurement may take to drain."""
SCOPES = [
    apps.SCOPE,
    "chat:conversations:read",
    "chat:messages:write",
]

POST_BODY = '{"content": "Thanks for waiting, we are on it."}'
"""What every post sends."""
POST_SCRIPT = f"""\
-- bench/chat.py: POST a message to a random conversation among the seeded ids.
-- args: first id, last id, API key.
local first, last
function init(args)
  first = tonumber(args[1])
  last = tonumber(args[2])
  math.randomseed(os.time())
  wrk.method = "POST"
  wrk.body = '{POST_BODY}'
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. args[3]
end

function request()
  local id = math.random(first, last)
  return wrk.format(nil, "/v1/chat/conversations/" .. id .. "/messages")
end
"""


@dataclass
class Case(Measured):
    path: str
    post: bool = False


@dataclass
class Seeded:
    account_id: int
    key: str
    first_conversation: int
    last_conversation: int
    sent: int
    """Outgoing messages seeded as already sent."""
    seconds: float


@dataclass
class Backend:
    name: str
    limiter: str
    database_url: str = ""
    redis_prefix: str | None = None
    skipped: str | None = None
    cases: list[Case] = field(default_factory=list)
    seeded: Seeded | None = None
    drain_seconds: list[float] = field(default_factory=list)
    delivered: int = 0
    server_version: str = ""

    @property
    def baseline(self) -> Case:
        return self.cases[0]


def make_cases() -> list[Case]:
    page = f"{CHAT}/conversations?limit={PAGE_SIZE}"
    return [
        Case("baseline", apps.PATH),
        Case("list", page),
        Case("list-page-200", f"{page}&page={DEEP_PAGE}"),
        Case("list-open", f"{page}&status=open"),
        Case("post", f"{CHAT}/conversations/<id>/messages", post=True),
    ]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("chat.py", __doc__)
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement (10)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    parser.add_argument("--rounds", type=int, default=3, help="measurements per case (3)")
    parser.add_argument(
        "--conversations", type=int, default=10_000, help="conversations seeded (10,000)"
    )
    parser.add_argument(
        "--messages", type=int, default=3, help="messages seeded per conversation (3)"
    )
    add_backends(parser)
    add_redis_url(parser, "Redis of the PostgreSQL profile")
    add_output(parser, "chat")
    args = parser.parse_args(argv)
    at_least_one(parser, args, "duration", "connections", "rounds")
    if args.conversations < PAGE_SIZE * DEEP_PAGE:
        parser.error(f"--conversations must be at least {PAGE_SIZE * DEEP_PAGE} (page 200)")
    if args.messages < 0:
        parser.error("--messages must not be negative")
    return args


# --- seeding -----------------------------------------------------------------------


def gateway_for(database_url: str) -> Gateway:
    settings = load_settings(
        environ={}, database_url=database_url, plugins=[apps.PRODUCT, "chat"], demo=False
    )
    return Gateway(settings, extra_plugins=apps.plugins())


async def prepare(database_url: str, args: argparse.Namespace) -> Seeded:
    """Migrate, create the account and its key, and insert the chat rows in bulk."""
    clock = time.monotonic()
    gateway = gateway_for(database_url)
    try:
        await gateway.migrate()
        account = await gateway.accounts.create_account(
            "bench", {apps.PRODUCT: apps.PLAN, "chat": PLAN}
        )
        created = await gateway.accounts.create_key(account, name="bench", scopes=SCOPES)
        async with gateway.database.transaction() as session:
            ids = await seed(session, account, args.conversations, args.messages)
        if not gateway.database.is_sqlite:
            # The state autovacuum keeps a live database in: statistics, and a visibility
            # map that lets the list's count and page be read from an index alone.
            autocommit = gateway.database.engine.execution_options(isolation_level="AUTOCOMMIT")
            async with autocommit.connect() as connection:
                await connection.execute(text("VACUUM ANALYZE"))
    finally:
        await gateway.database.dispose()
    if ids[-1] - ids[0] + 1 != len(ids):
        raise BenchError("the conversation ids are not contiguous: the post script needs them")
    sent = (await delivery_counts(database_url, account)).get("sent", 0)
    return Seeded(account, created.key, ids[0], ids[-1], sent, time.monotonic() - clock)


async def seed(session: Any, account: int, conversations: int, messages: int) -> list[int]:
    """Inboxes, agents, one contact per conversation and the conversations with their
    messages, each table in one executemany of a Core INSERT (the ORM's bulk path with
    RETURNING goes row by row on SQLite); last activity spread at random over
    ``ACTIVITY_SPAN``. Returns the conversation ids, ascending."""
    rng = random.Random(5)
    start = datetime.now(UTC) - ACTIVITY_SPAN

    async def insert_all(model: Any, rows: list[dict[str, Any]], key: str) -> dict[Any, int]:
        """Insert ``rows``; the new ids by the value of column ``key``."""
        await session.execute(insert(model.__table__), rows)
        column = getattr(model, key)
        found = await session.execute(select(column, model.id).where(model.account_id == account))
        return dict(found.all())

    common = {"account_id": account, "created_at": start}
    inboxes = await insert_all(
        Inbox,
        [
            {**common, "name": f"Inbox {n}", "channel_type": "live_chat", "is_enabled": True}
            for n in range(INBOXES)
        ],
        "name",
    )
    agents = await insert_all(
        Agent,
        [
            {
                **common,
                "name": f"Agent {n}",
                "email": f"agent{n}@example.com",
                "role": "administrator" if n == 0 else "agent",
                "availability": "online",
            }
            for n in range(AGENTS)
        ],
        "name",
    )
    contacts = await insert_all(
        Contact,
        [
            {
                **common,
                "name": f"Contact {n}",
                "email": f"contact{n}@example.com",
                "phone": f"+1555{n:07d}",
            }
            for n in range(conversations)
        ],
        "name",
    )
    rows = []
    for n in range(conversations):
        last = start + ACTIVITY_SPAN * rng.random()
        rows.append(
            {
                "account_id": account,
                "inbox_id": inboxes[f"Inbox {n % INBOXES}"],
                "contact_id": contacts[f"Contact {n}"],
                "agent_id": None if n % 5 == 0 else agents[f"Agent {n % AGENTS}"],
                "status": STATUSES[n % len(STATUSES)],
                "unread_count": n % 3,
                "last_activity_at": last,
                "created_at": last - timedelta(minutes=messages),
                "updated_at": last,
            }
        )
    ids = await insert_all(Conversation, rows, "contact_id")
    administrator = agents["Agent 0"]
    await session.execute(
        insert(Message.__table__),
        [
            {
                "account_id": account,
                "conversation_id": ids[row["contact_id"]],
                "type": "outgoing" if m % 2 else "incoming",
                "content": f"Message {m} of the conversation with contact {row['contact_id']}.",
                "private": False,
                "contact_id": None if m % 2 else row["contact_id"],
                "agent_id": (row["agent_id"] or administrator) if m % 2 else None,
                "created_at": row["last_activity_at"] - timedelta(minutes=messages - 1 - m),
                "delivery_status": "sent" if m % 2 else None,
                "delivery_attempts": m % 2,
            }
            for row in rows
            for m in range(messages)
        ],
    )
    return sorted(ids.values())


async def delivery_counts(database_url: str, account: int) -> dict[str, int]:
    """The account's outgoing messages by delivery status (pending, sent, failed)."""
    database = Database(database_url)
    try:
        async with database.transaction() as session:
            rows = await session.execute(
                select(Message.delivery_status, func.count())
                .where(Message.account_id == account, Message.delivery_status.is_not(None))
                .group_by(Message.delivery_status)
            )
            return dict(rows.all())
    finally:
        await database.dispose()


async def wait_delivered(database_url: str, account: int) -> float:
    """Wait until no message of the account is pending; the seconds it took."""
    clock = time.monotonic()
    while True:
        counts = await delivery_counts(database_url, account)
        if failed := counts.get("failed", 0):
            raise BenchError(f"{failed} posted messages failed delivery (see the server log)")
        if not (pending := counts.get("pending", 0)):
            return time.monotonic() - clock
        if time.monotonic() - clock > DELIVERY_WAIT:
            raise BenchError(f"{pending} messages still pending after {DELIVERY_WAIT:.0f} s")
        await asyncio.sleep(0.2)


# --- serving and measuring ---------------------------------------------------------


def write_config(workdir: Path) -> Path:
    path = workdir / "chat.toml"
    path.write_text(f"[products.chat.plans.{PLAN}]\nrequests_per_day = {LIMIT}\n")
    return path


def fetch(server: Server, path: str, headers: dict[str, str]) -> tuple[dict[str, str], Any]:
    request = urllib.request.Request(server.url(path), headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        answered = {name.lower(): value for name, value in response.headers.items()}
        return answered, json.loads(response.read())


def limiter_env(backend: Backend, redis_url: str) -> dict[str, str]:
    """The server settings of the backend's rate limiter: none for the in-memory one."""
    if backend.redis_prefix is None:
        return {}
    return {
        "TOLLWAY_REDIS_URL": redis_url,
        "TOLLWAY_RATE_LIMIT_PREFIX": backend.redis_prefix,
        # The job queue names the Redis keys of the jobs and of the link product's
        # click stream: a run of its own, so that nothing a stopped server left
        # behind (clicks still in the stream) is taken over by the next run's writer.
        "TOLLWAY_JOB_QUEUE_NAME": backend.redis_prefix.rstrip(":"),
    }


def start_server(
    backend: Backend, workdir: Path, args: argparse.Namespace, headers: dict[str, str]
) -> Server:
    env = {
        "TOLLWAY_DATABASE_URL": backend.database_url,
        "TOLLWAY_PLUGINS": f"{apps.PRODUCT},chat",
        "TOLLWAY_DEMO": "false",
        "TOLLWAY_AUTO_MIGRATE": "false",
        "TOLLWAY_CONFIG": str(write_config(workdir)),
        **limiter_env(backend, args.redis_url),
    }
    server = Server(f"chat-{backend.name.lower()}", TARGET, env, workdir)
    server.start(apps.PATH, headers)
    answered, body = fetch(server, f"{CHAT}/conversations?limit={PAGE_SIZE}", headers)
    if answered.get("x-ratelimit-limit") != str(LIMIT):
        raise ServerError(
            f"chat limit is {answered.get('x-ratelimit-limit')}, not {LIMIT}: config not read?"
        )
    if body["total"] != args.conversations or len(body["data"]) != PAGE_SIZE:
        raise BenchError(f"the first page lists {len(body['data'])} of {body['total']}")
    return server


def measure(
    case: Case,
    server: Server,
    args: argparse.Namespace,
    headers: dict[str, str],
    script: Path,
    seeded: Seeded,
    seconds: int,
) -> Measurement:
    if case.post:
        return run_wrk_script(
            server.url("/"),
            str(script),
            duration=seconds,
            connections=args.connections,
            script_args=[
                str(seeded.first_conversation),
                str(seeded.last_conversation),
                headers["Authorization"].removeprefix("Bearer "),
            ],
            timeout=REQUEST_TIMEOUT,
        )
    return run_wrk(
        server.url(case.path),
        duration=seconds,
        connections=args.connections,
        headers=headers,
        timeout=REQUEST_TIMEOUT,
    )


def settle(backend: Backend, server: Server, headers: dict[str, str], case: Case) -> None:
    """Wait until the server has answered what wrk left in flight (a request sent now
    answers after them) and, after posting, until every message is delivered."""
    for _ in range(2):
        server.probe(apps.PATH, headers)
    if case.post:
        assert backend.seeded is not None
        backend.drain_seconds.append(
            asyncio.run(wait_delivered(backend.database_url, backend.seeded.account_id))
        )


def run_backend(backend: Backend, args: argparse.Namespace, workdir: Path) -> None:
    log(f"{backend.name}: seeding {args.conversations:,} conversations")
    seeded = backend.seeded = asyncio.run(prepare(backend.database_url, args))
    log(f"{backend.name}: seeded in {seeded.seconds:.1f} s")
    headers = {"Authorization": f"Bearer {seeded.key}"}
    script = workdir / "chat-post.lua"
    script.write_text(POST_SCRIPT)
    cases = backend.cases = make_cases()
    with running([]) as servers:
        log(f"{backend.name}: starting granian on {TARGET} ({backend.limiter} rate limiter)")
        server = start_server(backend, workdir, args, headers)
        servers.append(server)

        def one(case: Case, seconds: int) -> Measurement:
            result = measure(case, server, args, headers, script, seeded, seconds)
            settle(backend, server, headers, case)
            return result

        log(f"{backend.name}: warming up, {WARMUP_SECONDS} s per case")
        for case in cases:
            one(case, WARMUP_SECONDS)
        backend.drain_seconds.clear()
        log(f"{backend.name}: measuring, {args.rounds} rounds of {args.duration} s per case")
        for index, case in rotating(cases, args.rounds):
            result = one(case, args.duration)
            case.runs.append(result)
            log(
                f"  round {index + 1}/{args.rounds} {case.name:<14} {result.rps:>8.0f} req/s"
                f"  p50 {result.p50_ms:7.2f} ms  p99 {result.p99_ms:7.2f} ms"
            )
    counts = asyncio.run(delivery_counts(backend.database_url, seeded.account_id))
    backend.delivered = counts.get("sent", 0) - seeded.sent


def run_postgres(
    backend: Backend,
    args: argparse.Namespace,
    workdir: Path,
    run: Callable[[Backend, argparse.Namespace, Path], None] = run_backend,
) -> None:
    """``run`` the backend on a throwaway PostgreSQL database and the Redis limiter
    (under a prefix of its own, deleted afterwards); skipped when either is unreachable."""
    if problem := asyncio.run(redis_unreachable(args.redis_url)):
        backend.skipped = f"Redis at {args.redis_url} unreachable ({problem})"
        return
    try:
        with postgres_database() as url:
            backend.database_url = url
            backend.redis_prefix = f"tollway-bench-chat:{secrets.token_hex(6)}:"
            try:
                backend.server_version = asyncio.run(postgres_version(url))
                run(backend, args, workdir)
            finally:
                counted = asyncio.run(redis_drop(args.redis_url, backend.redis_prefix))
                log(f"Redis counted {counted:,} hits under {backend.redis_prefix} (now deleted)")
    except Unreachable as error:
        backend.skipped = str(error)


# --- reporting ---------------------------------------------------------------------


def ratio(case: Case, backend: Backend) -> float:
    return case.median("rps") / backend.baseline.median("rps")


def verdicts(backends: list[Backend], connections: int) -> list[str]:
    """The target's PASS/MISS per PostgreSQL case, and the throughput it implies."""
    measured = [b for b in backends if b.name == "PostgreSQL" and not b.skipped]
    if not measured:
        return ["Target (PostgreSQL p99 at 32 connections): not measured, PostgreSQL skipped."]
    postgres = measured[0]
    items = []
    for case in postgres.cases[1:]:
        p99 = case.median("p99_ms")
        verdict = "PASS" if p99 < P99_TARGET_MS else "MISS"
        items.append(f"{case.name} **{verdict}** ({p99:.1f} ms)")
    needed = connections / (P99_TARGET_MS / 1e3)
    baseline = postgres.baseline.median("rps")
    return [
        f"Target, PostgreSQL p99 < {P99_TARGET_MS:.0f} ms at {connections} connections: "
        + "; ".join(items),
        "",
        f"wrk keeps {connections} requests in flight on one worker, so latency is about "
        f"{connections} / throughput: a p99 under {P99_TARGET_MS:.0f} ms needs at least "
        f"{needed:,.0f} req/s, i.e. {1e3 / needed:.2f} ms per request at most; the trivial "
        f"route costs {1e3 / baseline:.2f} ms here ({baseline:,.0f} req/s).",
    ]


def report(backends: list[Backend], args: argparse.Namespace, run: Run) -> str:
    measured = [backend for backend in backends if not backend.skipped]
    postgres = [backend.server_version for backend in measured if backend.server_version]
    lines = [
        "# Chat",
        "",
        run.headline("bench/chat.py")
        + " (compare the ratios within the run, not absolute numbers across runs).",
        "",
        run.machine(),
        f"- Python {platform.python_version()}, granian {version('granian')} (ASGI, 1 worker), "
        f"litestar {version('litestar')}, SQLAlchemy {version('sqlalchemy')}, "
        f"aiosqlite {version('aiosqlite')}, asyncpg {version('asyncpg')}, "
        f"redis-py {version('redis')}"
        + (f", PostgreSQL {postgres[0]} on the same machine" if postgres else ""),
        f"- load: `wrk -t1 -c{args.connections} -d{args.duration}s "
        f"--timeout={REQUEST_TIMEOUT:.0f}s --latency`; post with "
        "`-s chat-post.lua` (the script in bench/chat.py), which sends "
        '`{"content": "..."}` to a random seeded conversation; '
        f"{args.rounds} rounds in rotating order after a {WARMUP_SECONDS} s warm-up of each "
        f"case; medians below; whole run {run.elapsed:.0f} s",
        f"- data: one account with {args.conversations:,} conversations, one contact each, "
        f"{args.messages} messages each, {INBOXES} live_chat inboxes, {AGENTS} agents; "
        "statuses 40 % open, 20 % pending, 30 % resolved, 10 % snoozed; seeded in "
        + ", ".join(
            f"{backend.seeded.seconds:.1f} s ({backend.name})"
            for backend in measured
            if backend.seeded
        ),
        f"- server: `apps:chat_app` (chat and the bench route), `TOLLWAY_PLUGINS=bench,chat`, "
        f"a config lifting the chat `{PLAN}` plan to {LIMIT:,} requests/day; the bench route "
        f"is on its `{apps.PLAN}` plan ({apps.REQUESTS_PER_DAY:,}/day); every response 2xx",
        "- baseline: `GET /v1/bench/ping` on the same server, i.e. the pipeline's trivial "
        "route of `bench/run.py` on the same database and rate limiter",
        "",
        "| backend | case | request | req/s | ms/request | p50 (ms) | p99 (ms) "
        "| ratio to baseline |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for backend in measured:
        for case in backend.cases:
            method = "POST" if case.post else "GET"
            rps = case.median("rps")
            lines.append(
                f"| {backend.name} + {backend.limiter} | {case.name} | `{method} {case.path}` "
                f"| {rps:,.0f} | {1e3 / rps:.2f} | {case.median('p50_ms'):.2f} "
                f"| {case.median('p99_ms'):.2f} | {ratio(case, backend):.3f} |"
            )
    lines += [
        "",
        "ms/request is 1,000 / req/s: what one request costs when the load saturates "
        "the worker (which shares the machine's cores with the database and wrk).",
        "",
        *verdicts(backends, args.connections),
        "",
    ]
    for backend in measured:
        drains = backend.drain_seconds
        lines.append(
            f"Delivery, {backend.name}: all {backend.delivered:,} messages posted (warm-ups "
            "included) were sent, none failed; the backlog left after a post measurement "
            "drained in "
            f"{statistics.median(drains):.1f} s (median; max {max(drains):.1f} s)."
        )
    for backend in measured:
        lines += [
            "",
            f"Per round, {backend.name} (req/s; ratio to the same round's baseline):",
            "",
            *per_round_table(backend.cases, ratio=".3f"),
        ]
    skipped = [backend for backend in backends if backend.skipped]
    if skipped:
        lines += ["", *(f"Note: {backend.name} skipped: {backend.skipped}." for backend in skipped)]
    return "\n".join(lines) + "\n"


# --- main --------------------------------------------------------------------------


Runner = Callable[[Backend, argparse.Namespace, Path], None]
"""Measures one backend (``run_backend``, ``run_postgres``)."""


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run.begin()
    workdir = Path(tempfile.mkdtemp(prefix="tollway-bench-chat-"))
    backends: list[Backend] = []
    runners: list[tuple[Backend, Runner]] = []
    if "sqlite" in args.backends:
        sqlite = Backend("SQLite", "memory", f"sqlite+aiosqlite:///{workdir / 'chat.db'}")
        runners.append((sqlite, run_backend))
    if "postgresql" in args.backends:
        runners.append((Backend("PostgreSQL", "Redis"), run_postgres))
    if not run_all(runners, backends, args, workdir):
        return 1
    publish(report(backends, args, run), args.output)
    return 0


def run_all(
    runners: Sequence[tuple[Backend, Runner]],
    backends: list[Backend],
    args: argparse.Namespace,
    workdir: Path,
) -> bool:
    """Run each backend's runner in turn, adding the backend to ``backends``, then
    remove ``workdir``. ``False`` (and why, logged) when the run is invalid or no
    backend could be measured."""
    try:
        wrk_path()
        for backend, runner in runners:
            backends.append(backend)
            runner(backend, args, workdir)
            if backend.skipped:
                log(f"{backend.name} skipped: {backend.skipped}")
    except (LoadError, ServerError, BenchError) as error:
        log(f"bench: {error}")
        return False
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if all(backend.skipped for backend in backends):
        log("bench: no backend could be measured")
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
