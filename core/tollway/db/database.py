"""The async engine and sessions, with per-backend connection settings."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy import exc as sqlalchemy_exc
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers run beside the one writer; the busy timeout queues writers
    # instead of failing them; SQLite enforces foreign keys only when asked.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Database:
    """One engine per gateway process; sessions are short and per unit of work."""

    def __init__(self, url: str, **engine_options: Any) -> None:
        self.url = make_url(url)
        options: dict[str, Any] = {"pool_pre_ping": True}
        if self.url.get_backend_name() == "postgresql":
            options.update(pool_size=10, max_overflow=10, pool_timeout=5)
        options.update(engine_options)
        self.engine: AsyncEngine = create_async_engine(self.url, **options)
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)

    @property
    def is_sqlite(self) -> bool:
        return self.url.get_backend_name() == "sqlite"

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A session inside a transaction: committed on success, rolled back on error."""
        async with self.sessions() as session, session.begin():
            yield session

    async def dispose(self) -> None:
        await self.engine.dispose()


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
