"""The async engine and sessions, with per-backend connection settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
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
