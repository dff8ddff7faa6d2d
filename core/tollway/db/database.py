"""The async engine and sessions, with per-backend connection settings."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import event, text
from sqlalchemy import exc as sqlalchemy_exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from tollway.db.reads import Reads
from tollway.db.sqlite import OneHopDBAPI, Write, run_writes_on_thread


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers run beside the one writer; the busy timeout queues writers
    # instead of failing them; SQLite enforces foreign keys only when asked.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


IDLE_BEFORE_PING = 2.0
"""Seconds a pooled server connection may sit idle and still be handed out untested."""


class _PingWhenIdle:
    """Checks a pooled connection with a round trip only when it has been idle.

    ``pool_pre_ping`` pings on every checkout: one more round trip on every
    transaction, even one a millisecond after the last on the same connection. A
    connection that was just used is known to be alive; one that sat idle may have been
    dropped by a server restart or a proxy's timeout, so that one is pinged, and
    replaced when the ping fails. A connection that dies between two requests in quick
    succession fails its statement instead, and the pool then replaces every
    connection opened before the failure."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._dialect = engine.dialect
        event.listen(engine.sync_engine, "checkin", self.checkin)
        event.listen(engine.sync_engine, "checkout", self.checkout)

    @staticmethod
    def checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    def checkout(self, dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.pop("idle_since", None)
        if idle_since is None or time.monotonic() - idle_since < IDLE_BEFORE_PING:
            return
        try:
            alive = self._dialect.do_ping(dbapi_connection)
        except Exception as error:
            raise DisconnectionError(f"a pooled connection failed its ping: {error}") from error
        if not alive:
            raise DisconnectionError("a pooled connection failed its ping")


class Database:
    """One engine per gateway process; sessions are short and per unit of work, and
    reads that need no transaction go through :attr:`reads`."""

    def __init__(self, url: str, **engine_options: Any) -> None:
        self.url = make_url(url)
        options: dict[str, Any] = {}
        if self.url.get_backend_name() == "postgresql":
            options.update(pool_size=10, max_overflow=10, pool_timeout=5)
        elif self.url.drivername == "sqlite+aiosqlite":
            options["module"] = OneHopDBAPI()
        options.update(engine_options)
        self.engine: AsyncEngine = create_async_engine(self.url, **options)
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        elif not options.get("pool_pre_ping"):
            _PingWhenIdle(self.engine)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self.reads = Reads(
            self.engine,
            sqlite_path=self.url.database if self.is_sqlite and not _in_memory(self.url) else None,
            on_connect=_sqlite_pragmas,
        )

    @property
    def is_sqlite(self) -> bool:
        return self.url.get_backend_name() == "sqlite"

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A session inside a transaction: committed on success, rolled back on error."""
        async with self.sessions() as session, session.begin():
            yield session

    async def lock_for_writing(self, session: AsyncSession) -> None:
        """Take SQLite's write lock for ``session``'s transaction now (``BEGIN
        IMMEDIATE``), not at its first write: a transaction that will write anyway then
        runs every statement after this one on the event loop's thread, with no trip to
        SQLite's (see :mod:`tollway.db.sqlite`). Call it first, before any statement of
        the transaction, and keep such a transaction short: it holds up every other
        writer of the database. A no-op on PostgreSQL, whose writes lock only their
        rows."""
        if self.is_sqlite:
            await session.execute(text("BEGIN IMMEDIATE"))

    async def run_writes(self, connection: AsyncConnection, writes: Sequence[Write]) -> None:
        """Run ``writes`` (driver-level SQL with its parameters, nothing read back) in
        order, in ``connection``'s transaction.

        On SQLite all of them go in one trip to the driver's thread, where SQLite does
        its work without the GIL: a batch's writes then cost the event loop's thread
        one trip instead of the SQL itself (statements after the write lock otherwise
        run on the loop, :mod:`tollway.db.sqlite`). For a few big statements, such as
        one JSON document per table; the trip back waits for the loop to hand over the
        GIL, so many small ones are better run on the loop. Elsewhere each is an
        ``exec_driver_sql``."""
        if self.is_sqlite:
            await run_writes_on_thread(connection, writes)
            return
        for sql, parameters in writes:
            await connection.exec_driver_sql(sql, parameters)

    async def dispose(self) -> None:
        await self.reads.dispose()
        await self.engine.dispose()


def _in_memory(url: URL) -> bool:
    """An in-memory SQLite database exists in one connection only; its reads stay on it."""
    return url.database in (None, "", ":memory:") or "mode=memory" in str(url)


_UNAVAILABLE_HINTS = ("locked", "unable to open", "disk i/o", "connection", "shutting down")
"""How an ``OperationalError`` says the database is out of reach rather than that a
statement is wrong (SQLite's "no such table" is an ``OperationalError`` too)."""


def unavailable(error: BaseException) -> bool:
    """Whether ``error`` says the database could not be reached or dropped the
    connection (refused, reset, shutting down, restarting, locked), rather than that a
    statement was wrong: the request may succeed if retried shortly."""
    import asyncpg  # type: ignore[import-untyped]

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionError | socket.gaierror):
            return True
        if isinstance(current, DBAPIError) and (
            current.connection_invalidated
            or isinstance(current, sqlalchemy_exc.InterfaceError)
            or (
                isinstance(current, OperationalError)
                and any(hint in str(current.orig).lower() for hint in _UNAVAILABLE_HINTS)
            )
        ):
            return True
        if isinstance(
            current,
            asyncpg.exceptions.PostgresConnectionError
            | asyncpg.exceptions.OperatorInterventionError
            | asyncpg.exceptions.ConnectionDoesNotExistError,
        ):
            return True
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__
    return False
