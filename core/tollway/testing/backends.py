"""The databases and Redis a test session runs on, and migrated gateways built on them.

``gateway_factory`` tests run once per backend: SQLite with the in-memory limiter,
then PostgreSQL with Redis. Every session gets a throwaway PostgreSQL database and
every gateway a rate limit namespace, job queue and real-time bus channels of its own,
so parallel test workers (and benchmarks sharing the servers) never see each other's
data.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import MetaData, select, text

from tollway.gateway import Gateway
from tollway.settings import load_settings

POSTGRES_URL = os.environ.get(
    "TOLLWAY_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
"""The server throwaway databases are made on (its database is only connected to)."""
REDIS_URL = os.environ.get("TOLLWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
BACKENDS = [
    name.strip()
    for name in os.environ.get("TOLLWAY_TEST_BACKENDS", "sqlite,postgresql").split(",")
    if name.strip()
]
"""The backends ``gateway_factory`` tests run on (``TOLLWAY_TEST_BACKENDS``)."""


def unavailable(reason: str) -> None:
    """Skip locally, fail in CI: a backend test must never pass by not running."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"backend unavailable in CI: {reason}")
    pytest.skip(reason)


@dataclass(frozen=True)
class Backend:
    """Where a test session's gateways keep their data."""

    name: str
    """``sqlite`` or ``postgresql``."""
    database_url: str
    redis_url: str | None
    """``None`` on SQLite: the in-memory rate limiter and job queue."""


async def create_postgres_database(server_url: str = POSTGRES_URL) -> str:
    """A new, empty database on the PostgreSQL server of ``server_url``; its URL for
    tollway (``postgresql+asyncpg://``). Raises what asyncpg raises when the server
    does not answer; drop it with :func:`drop_postgres_database`."""
    import asyncpg  # type: ignore[import-untyped]

    name = f"tollway_test_{secrets.token_hex(4)}"
    connection = await asyncpg.connect(server_url, timeout=5)
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    base = server_url.rsplit("/", 1)[0]
    return f"{base}/{name}".replace("postgresql://", "postgresql+asyncpg://", 1)


async def drop_postgres_database(url: str, server_url: str = POSTGRES_URL) -> None:
    """Drop the database of ``url``, connections to it included."""
    import asyncpg

    name = url.rsplit("/", 1)[1]
    connection = await asyncpg.connect(server_url, timeout=5)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


async def redis_unreachable(url: str) -> str | None:
    """Why Redis at ``url`` does not answer PING, or ``None`` when it does."""
    import redis.asyncio as redis

    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        await client.ping()
    except (OSError, redis.RedisError) as error:
        return str(error) or type(error).__name__
    finally:
        await client.aclose()
    return None


@pytest.fixture(scope="session", params=BACKENDS)
async def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Backend]:
    """A database (and Redis for PostgreSQL) for this test session."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "tollway.db"
        yield Backend("sqlite", f"sqlite+aiosqlite:///{path}", None)
        return
    try:
        url = await create_postgres_database()
    except Exception as error:  # asyncpg raises its own errors besides OSError
        unavailable(f"PostgreSQL at {POSTGRES_URL} unreachable: {error}")
        return
    if problem := await redis_unreachable(REDIS_URL):
        await drop_postgres_database(url)
        unavailable(f"Redis at {REDIS_URL} unreachable: {problem}")
        return
    try:
        yield Backend("postgresql", url, REDIS_URL)
    finally:
        await drop_postgres_database(url)


GatewayFactory = Callable[..., Awaitable[Gateway]]
"""The type of the ``gateway_factory`` fixture."""


async def database_dump(gateway: Gateway) -> str:
    """Everything the gateway's database holds, for asserting what is never stored (a
    card's number): the SQLite file and its write-ahead log as bytes (what freed pages
    still hold included), or every row of every table on PostgreSQL."""
    if gateway.database.is_sqlite:
        path = Path(gateway.settings.database_url.split("///", 1)[1])
        files = [path, path.with_name(f"{path.name}-wal")]
        return "".join(file.read_bytes().decode("latin-1") for file in files if file.exists())
    metadata = MetaData()
    async with gateway.database.transaction() as session:
        connection = await session.connection()
        await connection.run_sync(metadata.reflect)
        rows = [
            repr(row)
            for table in metadata.sorted_tables
            for row in (await session.execute(select(table))).all()
        ]
    return "\n".join(rows)


async def _clear(gateway: Gateway) -> None:
    tables = [table for item in gateway.registry.models for table in item.metadata.sorted_tables]
    async with gateway.database.transaction() as session:
        if gateway.database.is_sqlite:
            for table in reversed(tables):
                await session.execute(table.delete())
        else:
            # DELETE, not TRUNCATE: a TRUNCATE of every table gives each (and each
            # index) a new file, fsynced at commit, which took 0.25 s per test on a
            # quiet machine and seconds on a busy one; deleting the few rows a test
            # left, then restarting every sequence, is one statement and milliseconds.
            names = ", ".join(f"'{table.name}'" for table in reversed(tables))
            await session.execute(text(_CLEAR_POSTGRES.replace("NAMES", names)))


_CLEAR_POSTGRES = """
DO $$
DECLARE
    name text;
    first bigint;
BEGIN
    FOREACH name IN ARRAY ARRAY[NAMES]::text[] LOOP
        EXECUTE format('DELETE FROM %I', name);
    END LOOP;
    FOR name, first IN
        SELECT format('%I.%I', schemaname, sequencename), start_value FROM pg_sequences
        WHERE schemaname = current_schema() AND last_value IS NOT NULL
    LOOP
        PERFORM setval(name, first, false);
    END LOOP;
END $$
"""


@pytest.fixture
async def gateway_factory(backend: Backend) -> AsyncIterator[GatewayFactory]:
    """``await gateway_factory(plugins=[...], extra_plugins=[(name, obj)], **settings)``:
    a migrated gateway on an empty database with its own Redis namespaces.

    ``isolated=True`` gives the gateway a database of its own instead of the session's,
    for plugins whose migrations the other tests' gateways do not know.
    """
    made: list[Gateway] = []
    own_databases: list[str] = []

    async def make(
        plugins: list[str] | None = None,
        extra_plugins: Iterable[tuple[str, object]] = (),
        *,
        isolated: bool = False,
        **overrides: Any,
    ) -> Gateway:
        database_url = backend.database_url
        if isolated and backend.name == "sqlite":
            database_url = database_url.replace(".db", f"-{secrets.token_hex(4)}.db")
        elif isolated:
            database_url = await create_postgres_database()
            own_databases.append(database_url)
        namespace = secrets.token_hex(6)
        options: dict[str, Any] = {
            "database_url": database_url,
            "redis_url": backend.redis_url,
            "rate_limit_prefix": f"tollway-test:{namespace}:",
            "job_queue_name": f"tollway-test-{namespace}",
            # Tests running at once on one Redis have the same ids, hence topics.
            "live_channel_prefix": f"tollway-test:{namespace}:live:",
            # One Redis call on a loaded CI machine can take longer than production's
            # 0.25 s; a test would then see the limiter "down" (admitted, uncounted).
            # The tests' Redis outages are refused connections, seen at once.
            "redis_timeout": 5.0,
            "demo": False,
        }
        options.update(overrides)
        settings = load_settings(environ={}, plugins=plugins, **options)
        gateway = Gateway(settings, extra_plugins=extra_plugins)
        made.append(gateway)
        await gateway.migrate()
        await _clear(gateway)
        return gateway

    yield make
    for gateway in made:
        await gateway.database.dispose()
    for url in own_databases:
        await drop_postgres_database(url)
