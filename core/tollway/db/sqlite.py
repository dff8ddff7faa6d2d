"""SQLite through aiosqlite: one thread hop per statement, writers in turn.

SQLAlchemy's aiosqlite adapter makes four trips to aiosqlite's thread for every
statement: open a cursor, execute, fetch the rows, close the cursor. Each trip is a
future resolved across threads, some tens of microseconds when the event loop is
busy: more than SQLite takes to run a short statement. :class:`OneHopCursor` does all
four in one function on that thread and keeps the rows, so a statement costs one trip.
Everything else (the connection, its thread, commit and rollback, errors) is the
adapter's own.

Once a transaction holds SQLite's write lock (after its first write, or after ``BEGIN
IMMEDIATE``: :meth:`tollway.db.Database.lock_for_writing`), its statements run on the
event loop's thread instead, up to the commit: there is no lock left for
them to wait on, and the trip costs more than the statement. The trip is not only the
future: the thread needs the GIL back after every step of SQLite, which on a busy
gateway means forcing the event loop's thread to hand it over and waiting for the
operating system to run the other thread. The link product's click writer, about 15
statements a batch, lost the loop more time that way than all its own work took: with
its transactions' later statements on the loop, the loop's thread went from 0.69-0.75
of a core busy during a SQLite gateway's redirects to 0.88-0.91, as on the trivial
route (docs/benchmarks.md). Reads before the first write stay on the thread (a long query
leaves the loop serving meanwhile), as do the first write (it may wait for another
process's lock in the busy handler) and the commit (it may checkpoint the WAL, with an
``fsync``). A few big writes go the other way, all in one trip to the thread, where
SQLite does their work without the GIL (:func:`run_writes_on_thread`): the click writer
now sends its batch's writes so, and keeps only its reads on the loop.

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
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.util.concurrency import await_

_Outcome = tuple[Any, int, int | None, list[Any]]

BUSY_TIMEOUT = 5.0
"""Seconds a writer waits for its turn, as ``PRAGMA busy_timeout`` lets SQLite wait."""
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "BEGIN I")
"""The statements before which Python's sqlite3 opens a transaction, and ``BEGIN
IMMEDIATE``, which opens one holding the write lock
(:meth:`tollway.db.Database.lock_for_writing`)."""


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


async def _on_loop(
    connection: sqlite3.Connection, operation: str, parameters: Any, many: bool
) -> _Outcome:
    """:func:`_execute` on the loop's thread, after letting the loop run once: a
    transaction's statements are short, but a batch's several in a row would hold up
    the requests waiting meanwhile. (SQLAlchemy requires an ``await`` per statement.)"""
    await asyncio.sleep(0)
    return _execute(connection, operation, parameters, many)


Write = tuple[str, Sequence[Any]]
"""A statement for :func:`run_writes_on_thread`: driver-level SQL and its parameters."""


def _run_writes(connection: sqlite3.Connection, writes: Sequence[Write]) -> None:
    """On aiosqlite's thread: run each of ``writes`` in turn."""
    for sql, parameters in writes:
        connection.execute(sql, parameters).close()


async def run_writes_on_thread(connection: AsyncConnection, writes: Sequence[Write]) -> None:
    """:meth:`tollway.db.Database.run_writes` on SQLite: ``writes`` in one trip to the
    thread of ``connection``'s aiosqlite connection, in its open transaction. An error
    is raised as SQLAlchemy raises the driver's (``OperationalError`` and the rest)."""
    if not writes:
        return
    adapted: _Connection = (await connection.get_raw_connection()).dbapi_connection  # type: ignore[assignment]
    driver = adapted._connection
    try:
        await driver._execute(_run_writes, driver._conn, writes)
    except sqlite3.Error as error:
        raise DBAPIError.instance(None, None, error, sqlite3.Error) from error


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
        raw: sqlite3.Connection = self._connection._conn
        try:
            if connection.writing:
                outcome = await_(_on_loop(raw, operation, parameters, many))
            else:
                write = operation.lstrip()[:7].upper().startswith(_WRITES)
                if write and connection.turn is None:
                    connection.turn = await_(connection.dbapi.turns.take())
                run = self._connection._execute(_execute, raw, operation, parameters, many)
                outcome = await_(run)
                # Python's sqlite3 began a transaction for the write, which holds the
                # write lock until it ends.
                connection.writing = write and connection.on_loop and raw.in_transaction
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
    """The adapter's connection, with one-hop cursors and the writer's turn it holds.

    A commit or rollback with no transaction open (Python's sqlite3 opens one at the
    first write) makes no trip: sqlite3 would do nothing with it on the thread. That is
    the commit of every session that only read, and the pool's rollback of every
    connection it takes back."""

    __slots__ = ("on_loop", "turn", "writing")
    _cursor_cls = OneHopCursor  # type: ignore[assignment]
    dbapi: OneHopDBAPI

    def __init__(self, dbapi: OneHopDBAPI, connection: Any, *, on_loop: bool) -> None:
        super().__init__(dbapi, connection)
        self.turn: asyncio.Lock | None = None
        self.on_loop = on_loop
        """The sqlite3 connection may be used from the loop's thread too (a file's are:
        SQLAlchemy opens them with ``check_same_thread=False``)."""
        self.writing = False
        """The open transaction holds the write lock: statements run on the loop."""

    def _end_turn(self) -> None:
        self.writing = False
        turn, self.turn = self.turn, None
        if turn is not None:
            turn.release()

    def commit(self) -> None:
        try:
            if self._connection._conn.in_transaction:
                super().commit()
        finally:
            self._end_turn()

    def rollback(self) -> None:
        try:
            if self._connection._conn.in_transaction:
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
        on_loop = kw.get("check_same_thread", True) is False
        return _Connection(self, await_(connection), on_loop=on_loop)
