"""SQLite through aiosqlite: one thread hop per statement, writers in turn.

SQLAlchemy's aiosqlite adapter makes four trips to aiosqlite's thread for every
statement: open a cursor, execute, fetch the rows, close the cursor. Each trip is a
future resolved across threads, some tens of microseconds when the event loop is
busy: more than SQLite takes to run a short statement. :class:`OneHopCursor` does all
four in one function on that thread and keeps the rows, so a statement costs one trip.
Everything else (the connection, its thread, commit and rollback, errors) is the
adapter's own.

SQLite has one writer at a time. Left to itself, a connection that finds the write
lock taken sleeps and retries (1, 2, 5, 10 ms and longer), and it is not fair: a
steady stream of short writers can starve one past its busy timeout, which then fails
as "database is locked". So the process's writers take turns (:class:`Turns`): a
connection takes the turn before its first write of a transaction, which is when
SQLite takes its write lock, and gives it back when the transaction ends, waking the
next writer at once. Reads never wait. Other processes on the same file still meet
SQLite's busy handler.
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util.concurrency import await_

_Outcome = tuple[Any, int, int | None, list[Any]]

BUSY_TIMEOUT = 5.0
"""Seconds a writer waits for its turn, as ``PRAGMA busy_timeout`` lets SQLite wait."""
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
"""The statements before which Python's sqlite3 opens a transaction."""


class Turns:
    """The process's SQLite writers, one transaction at a time, first come first served."""

    def __init__(self) -> None:
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    def lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def take(self) -> asyncio.Lock:
        """Wait for the turn (at most :data:`BUSY_TIMEOUT`); returns the lock to release."""
        lock = self.lock()
        try:
            async with asyncio.timeout(BUSY_TIMEOUT):
                await lock.acquire()
        except TimeoutError:
            raise sqlite3.OperationalError("database is locked") from None
        return lock


def _execute(
    connection: sqlite3.Connection, operation: str, parameters: Any, many: bool
) -> _Outcome:
    """On aiosqlite's thread: run one statement and take everything it gives back."""
    cursor = connection.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        elif parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        rows = cursor.fetchall() if cursor.description else []
        return cursor.description, cursor.rowcount, cursor.lastrowid, rows
    finally:
        cursor.close()


class OneHopCursor:
    """The DBAPI cursor SQLAlchemy drives: each ``execute`` is one trip to the thread,
    and the rows are fetched from memory afterwards."""

    server_side = False
    __slots__ = (
        "_adapt_connection",
        "_connection",
        "_rows",
        "arraysize",
        "description",
        "lastrowid",
        "rowcount",
    )

    def __init__(self, adapt_connection: _Connection) -> None:
        self._adapt_connection = adapt_connection
        self._connection: Any = adapt_connection._connection
        self._rows: collections.deque[Any] = collections.deque()
        self.arraysize = 1
        self.description: Any = None
        self.lastrowid: int | None = None
        self.rowcount = -1

    def _run(self, operation: str, parameters: Any, *, many: bool) -> None:
        connection = self._adapt_connection
        try:
            if connection.turn is None and operation.lstrip()[:7].upper().startswith(_WRITES):
                connection.turn = await_(connection.dbapi.turns.take())
            outcome: _Outcome = await_(
                self._connection._execute(
                    _execute, self._connection._conn, operation, parameters, many
                )
            )
        except Exception as error:
            self._adapt_connection._handle_exception(error)
        self.description, self.rowcount, self.lastrowid, rows = outcome
        self._rows = collections.deque(rows)

    def execute(self, operation: str, parameters: Any = None) -> None:
        self._run(operation, parameters, many=False)

    def executemany(self, operation: str, seq_of_parameters: Sequence[Any]) -> None:
        self._run(operation, seq_of_parameters, many=True)

    def fetchone(self) -> Any:
        return self._rows.popleft() if self._rows else None

    def fetchmany(self, size: int | None = None) -> list[Any]:
        rows = self._rows
        return [rows.popleft() for _ in range(min(size or self.arraysize, len(rows)))]

    def fetchall(self) -> list[Any]:
        rows = list(self._rows)
        self._rows.clear()
        return rows

    def __iter__(self) -> Iterator[Any]:
        while self._rows:
            yield self._rows.popleft()

    def close(self) -> None:
        self._rows.clear()

    async def _async_soft_close(self) -> None:
        return None

    def setinputsizes(self, *inputsizes: Any) -> None:
        return None


class _Connection(AsyncAdapt_aiosqlite_connection):
    """The adapter's connection, with one-hop cursors and the writer's turn it holds."""

    __slots__ = ("turn",)
    _cursor_cls = OneHopCursor  # type: ignore[assignment]
    dbapi: OneHopDBAPI

    def __init__(self, dbapi: OneHopDBAPI, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self.turn: asyncio.Lock | None = None

    def _end_turn(self) -> None:
        turn, self.turn = self.turn, None
        if turn is not None:
            turn.release()

    def commit(self) -> None:
        try:
            super().commit()
        finally:
            self._end_turn()

    def rollback(self) -> None:
        try:
            super().rollback()
        finally:
            self._end_turn()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._end_turn()

    def _terminate_force_close(self) -> None:
        try:
            super()._terminate_force_close()
        finally:
            self._end_turn()


class OneHopDBAPI(AsyncAdapt_aiosqlite_dbapi):
    """aiosqlite as SQLAlchemy's adapter presents it, with :class:`OneHopCursor`s:
    pass an instance as ``module=`` to ``create_async_engine``."""

    def __init__(self) -> None:
        super().__init__(aiosqlite, sqlite3)
        self.turns = Turns()

    def connect(self, *arg: Any, **kw: Any) -> _Connection:
        connection = self.aiosqlite.connect(*arg, **kw)
        connection._thread.daemon = True  # as SQLAlchemy's adapter does
        return _Connection(self, await_(connection))
