"""The read path: one statement, one round trip, rows straight into the wire's types.

A request that only reads has no use for a transaction, an ORM identity map or a
commit. :class:`Reads` runs one Core ``SELECT`` per call, outside any transaction
(each statement sees a consistent snapshot of its own), and hands each row's columns,
in order, to ``into``: a msgspec Struct whose fields are the selected columns, or a
function building one. A list and its total come from one statement
(:class:`Paged`). Statements are built once, with ``bindparam`` for the values of a
request, and executed with those values; a page's offset and limit
(:data:`PAGE_OFFSET`, :data:`PAGE_LIMIT`) are the exception, written into the SQL as
numbers, so PostgreSQL plans each page size once instead of every execution.

SQLAlchemy compiles each statement once per database (:class:`_Compiled`): its SQL,
the order of its parameters and the columns' type conversions. The statement then
runs on the driver itself, which costs a fraction of SQLAlchemy's execution path
(connection checkout and return, execution context, result object):

* PostgreSQL: an asyncpg pool of the reads' own, in autocommit (no ``BEGIN``, no
  ``COMMIT``, no reset on return), with asyncpg's prepared-statement cache;
* SQLite: ``sqlite3`` connections used from a small thread pool, one hop to a thread
  per read (WAL lets them read beside the writer);
* anything else, or an in-memory SQLite database: the gateway's async engine.

An ``IN`` list (``bindparam(..., expanding=True)``) runs on the driver too: on
PostgreSQL as one array parameter (``= ANY($n)``), so one prepared statement serves
every length; elsewhere (and for lists of tuples) written out by SQLAlchemy for each
execution.
"""

from __future__ import annotations

import asyncio
import json
import queue
import re
import sqlite3
import threading
import weakref
from collections.abc import Callable, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from sqlalchemy import BindParameter, Float, Integer, Numeric, Select, bindparam, func, select
from sqlalchemy.engine import URL, Dialect
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.sqltypes import TupleType
from sqlalchemy.types import TypeEngine

T = TypeVar("T")
AnySelect: TypeAlias = Select[*tuple[Any, ...]]
Rows: TypeAlias = Sequence[Sequence[Any]]

READ_THREADS = 4
"""SQLite readers run beside each other (WAL) in up to this many threads."""
POSTGRES_READ_CONNECTIONS = 10
"""The most connections the reads' own PostgreSQL pool opens, per process."""

PAGE_OFFSET: BindParameter[int] = bindparam("offset", type_=Integer, literal_execute=True)
"""A page's ``OFFSET``: ``.offset(PAGE_OFFSET).limit(PAGE_LIMIT)``, given as ``offset=``.

Both are written into the SQL as numbers rather than sent as parameters. A parameter
hides from PostgreSQL's planner whether 25 rows or 10,000 are wanted, so a prepared
statement's generic plan must assume many (hash joins over whole tables) and PostgreSQL
plans every execution anew instead, which cost more than running a page of the chat
list (0.47 → 0.22 ms per statement; docs/benchmarks.md). With the numbers in the text,
each page size and offset is prepared once per connection and runs on its generic plan."""
PAGE_LIMIT: BindParameter[int] = bindparam("limit", type_=Integer, literal_execute=True)
"""A page's ``LIMIT``: see :data:`PAGE_OFFSET`."""


def _result_processor(kind: TypeEngine[Any], dialect: Dialect) -> Callable[[Any], Any] | None:
    """What converts a driver's value of a column of ``kind``, or ``None``. PostgreSQL's
    numeric types choose theirs by the column's database type, which a statement's
    column does not know before it runs: their values stay as asyncpg gives them
    (``float`` for a float, ``Decimal`` for a numeric, as SQLAlchemy's would)."""
    if isinstance(kind, (Numeric, Float)) and dialect.name == "postgresql":
        return None
    processor: Callable[[Any], Any] | None = kind._cached_result_processor(dialect, None)
    return processor


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A statement as one dialect runs it: its SQL, its parameters in order with their
    conversions, and its columns' conversions (``None`` where there is none)."""

    compiled: SQLCompiler
    sql: str
    names: tuple[str, ...]
    binds: tuple[Callable[[Any], Any] | None, ...]
    results: tuple[Callable[[Any], Any] | None, ...] | None
    numbers: tuple[str, ...]
    """Integer parameters written into the SQL (``literal_execute``), by name."""
    expands: bool
    """Has a list parameter (``bindparam(..., expanding=True)``): an ``IN`` whose SQL
    depends on the list's length, written out for every execution."""

    @classmethod
    def of(cls, statement: AnySelect, dialect: Dialect) -> _Compiled | None:
        """``None`` for a statement the driver cannot run as compiled."""
        compiled = statement.compile(dialect=dialect)
        assert isinstance(compiled, SQLCompiler)
        if compiled.positiontup is None:
            return None
        written = compiled.literal_execute_params
        if any(not isinstance(bind.type, Integer) for bind in written):
            return None
        numbers = tuple(sorted({bind.key for bind in written}))
        sql = compiled.string
        lists = {name for name, bind in compiled.binds.items() if bind.expanding}
        names = tuple(n for n in compiled.positiontup if n not in numbers and n not in lists)
        arrays: list[str] = []
        if (
            lists
            and dialect.name == "postgresql"
            and not any(isinstance(compiled.binds[name].type, TupleType) for name in lists)
        ):
            sql, arrays = _as_arrays(sql, len(names))
        expands = bool(lists) and not arrays
        binds: list[Callable[[Any], Any] | None] = []
        for name in (*names, *arrays):
            convert = compiled._bind_processors.get(name)
            if convert is not None and not callable(convert):
                return None  # a tuple's elements, converted one by one
            binds.append(_each(convert) if name in arrays else convert)
        names = (*names, *arrays)
        results = tuple(
            _result_processor(column.type, dialect) for column in statement.selected_columns
        )
        return cls(
            compiled,
            sql,
            names,
            tuple(binds),
            results if any(results) else None,
            numbers,
            expands,
        )

    def bound(self, params: dict[str, Any]) -> tuple[str, list[Any]]:
        """The SQL to run with ``params`` and its arguments, in order."""
        values = self.compiled.construct_params(params)
        if self.expands:
            return self._expanded(values)
        sql = self.sql
        for name in self.numbers:
            sql = sql.replace(f"__[POSTCOMPILE_{name}]", str(_whole(values[name])))
        arguments = [
            values[name] if convert is None else convert(values[name])
            for name, convert in zip(self.names, self.binds, strict=True)
        ]
        return sql, arguments

    def _expanded(self, values: MutableMapping[str, Any]) -> tuple[str, list[Any]]:
        """SQLAlchemy's own rendering of the lists (as its execution would do it), at
        tens of microseconds: for the occasional batch read, not a request's page."""
        for name in self.numbers:
            _whole(values[name])
        state = self.compiled._process_parameters_for_postcompile(values, _populate_self=False)
        assert state.positiontup is not None
        converts = {**self.compiled._bind_processors, **state.processors}
        arguments = []
        for name in state.positiontup:
            convert = converts.get(name)
            value = state.parameters[name]
            arguments.append(value if convert is None else convert(value))  # type: ignore[operator]
        return state.statement, arguments

    def converted(self, rows: Rows) -> Rows:
        if self.results is None:
            return rows
        conversions = [(i, convert) for i, convert in enumerate(self.results) if convert]
        converted = []
        for row in rows:
            values = list(row)
            for i, convert in conversions:
                values[i] = convert(values[i])
            converted.append(values)
        return converted


class Reads:
    """Read-only statements for one database, each in one round trip."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        sqlite_path: str | None = None,
        on_connect: Callable[[Any, Any], None] | None = None,
    ) -> None:
        """``engine`` is the gateway's. Reads of a PostgreSQL database go to a pool of
        their own on the same server; with ``sqlite_path``, reads of that file go to
        ``sqlite3`` connections that get ``on_connect`` when opened."""
        self._engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._dialect = engine.dialect
        self._compiled: weakref.WeakKeyDictionary[AnySelect, _Compiled | None] = (
            weakref.WeakKeyDictionary()
        )
        self._driver: _Postgres | _Sqlite | None = None
        if sqlite_path is not None:
            self._driver = _Sqlite(sqlite_path, on_connect)
        elif engine.url.drivername == "postgresql+asyncpg":
            self._driver = _Postgres(engine.url)

    @property
    def dialect(self) -> str:
        """The database's dialect name (``sqlite``, ``postgresql``), for a statement
        built differently for each."""
        return str(self._dialect.name)

    def _prepared(self, statement: AnySelect) -> _Compiled | None:
        try:
            return self._compiled[statement]
        except KeyError:
            prepared = self._compiled[statement] = _Compiled.of(statement, self._dialect)
            return prepared

    async def _rows(self, statement: AnySelect, params: dict[str, Any]) -> Rows:
        prepared = self._prepared(statement) if self._driver is not None else None
        if prepared is None or self._driver is None:
            async with self._engine.connect() as connection:
                return (await connection.execute(statement, params)).all()
        rows = await self._driver.fetch(*prepared.bound(params))
        return prepared.converted(rows)

    async def all(self, statement: AnySelect, into: Callable[..., T], **params: Any) -> list[T]:
        """Every row of ``statement`` (its bound parameters given as ``params``), each
        as ``into(*columns)``."""
        return [into(*row) for row in await self._rows(statement, params)]

    async def first(self, statement: AnySelect, into: Callable[..., T], **params: Any) -> T | None:
        """The first row of ``statement`` as ``into(*columns)``, or ``None``."""
        rows = await self._rows(statement, params)
        return into(*rows[0]) if rows else None

    async def scalar(self, statement: AnySelect, **params: Any) -> Any:
        """The first column of the first row, or ``None``."""
        rows = await self._rows(statement, params)
        return rows[0][0] if rows else None

    async def page(
        self, query: Paged, into: Callable[..., T], **params: Any
    ) -> tuple[list[T], int]:
        """A page of ``query`` and its total, in one statement. Only a page past the
        end, which has no row to carry the total, costs a second statement."""
        rows = await self._rows(query.statement, params)
        if rows:
            return [into(*row[:-1]) for row in rows], int(rows[0][-1])
        return [], int(await self.scalar(query.total, **params) or 0)

    async def dispose(self) -> None:
        if self._driver is not None:
            await self._driver.close()


class _Postgres:
    """asyncpg connections of the reads' own, one pool per event loop."""

    def __init__(self, url: URL) -> None:
        self._dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self._opening: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    async def _pool(self) -> Any:
        import asyncpg  # type: ignore[import-untyped]

        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is not None:
            return pool
        lock = self._opening.setdefault(loop, asyncio.Lock())
        async with lock:
            pool = self._pools.get(loop)
            if pool is None:
                pool = await asyncpg.create_pool(
                    self._dsn,
                    min_size=0,
                    max_size=POSTGRES_READ_CONNECTIONS,
                    init=_decode_json,
                    reset=_leave_as_is,
                )
                self._pools[loop] = pool
        return pool

    async def fetch(self, sql: str, arguments: list[Any]) -> Rows:
        pool = await self._pool()
        async with pool.acquire() as connection:
            rows: Rows = await connection.fetch(sql, *arguments)
            return rows

    async def close(self) -> None:
        pools, self._pools = list(self._pools.items()), weakref.WeakKeyDictionary()
        running = asyncio.get_running_loop()
        for loop, pool in pools:
            if loop is running:
                await pool.close()
            else:
                pool.terminate()


async def _leave_as_is(connection: Any) -> None:
    """What a connection needs when it goes back to the pool: nothing. asyncpg's
    default reset sends ``SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *;
    RESET ALL`` on every release, a round trip costing a tenth of a list's CPU. These
    connections only ever run single ``SELECT`` statements in autocommit: no lock,
    cursor, listener or setting outlives one. (asyncpg still rolls back a transaction
    left open, and drops a connection whose query was cancelled.)"""


async def _decode_json(connection: Any) -> None:
    """JSON columns as Python values, as SQLAlchemy's asyncpg dialect has them decoded
    (its JSON types convert no result of their own); parameters arrive serialized."""
    for name in ("json", "jsonb"):
        await connection.set_type_codec(
            name, encoder=str, decoder=json.loads, schema="pg_catalog", format="text"
        )


class _Sqlite:
    """``sqlite3`` connections to one file, used one at a time from a thread pool."""

    def __init__(self, path: str, on_connect: Callable[[Any, Any], None] | None) -> None:
        self._path = path
        self._on_connect = on_connect
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._threads: ThreadPoolExecutor | None = None

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="tollway-reads")
            return self._threads

    def _connection(self) -> sqlite3.Connection:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            connection = sqlite3.connect(self._path, check_same_thread=False)
            if self._on_connect is not None:
                self._on_connect(connection, None)
            with self._lock:
                self._opened.append(connection)
            return connection

    def _fetch(self, sql: str, arguments: list[Any]) -> Rows:
        connection = self._connection()
        try:
            return connection.execute(sql, arguments).fetchall()
        finally:
            self._idle.put(connection)

    async def fetch(self, sql: str, arguments: list[Any]) -> Rows:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor(), self._fetch, sql, arguments)

    async def close(self) -> None:
        with self._lock:
            threads, self._threads = self._threads, None
            opened, self._opened = self._opened, []
        if threads is not None:
            threads.shutdown(wait=True)
        for connection in opened:
            connection.close()
        self._idle = queue.SimpleQueue()


class Paged:
    """A page and the total it is a page of, as one statement: the count rides along as
    a last column, computed once. Build it once (at import, or cached per variant of
    the filters) and pass the values as bound parameters: a statement built anew for
    every request costs more to build and to look up in SQLAlchemy's compiled cache
    than the database takes to run it."""

    def __init__(self, statement: AnySelect, total: AnySelect) -> None:
        """``statement`` selects the page (ordered, with its offset and limit);
        ``total`` counts the rows it pages through (:func:`count_of`)."""
        # Never correlated: a table of the page must not turn the total into a per-row count.
        counted = total.correlate(None).scalar_subquery().label("total")
        self.statement = statement.add_columns(counted)
        self.total = total


_IN_LIST = re.compile(r"(NOT )?IN \(__\[POSTCOMPILE_(\w+)\]\)")


def _as_arrays(sql: str, given: int) -> tuple[str, list[str]]:
    """PostgreSQL's ``sql`` with each ``IN`` list as one array parameter (``= ANY($n)``,
    ``<> ALL($n)`` for ``NOT IN``), numbered after the ``given`` others; and the lists'
    names in the order of their new parameters. One statement for every length of the
    list: asyncpg prepares it once, where written-out lists are a statement per length."""
    arrays: list[str] = []

    def array(found: re.Match[str]) -> str:
        arrays.append(found[2])
        number = given + len(arrays)
        return f"<> ALL(${number})" if found[1] else f"= ANY(${number})"

    return _IN_LIST.sub(array, sql), arrays


def _each(convert: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    """A list parameter's conversion: its elements', one by one, into a list."""
    if convert is None:
        return list
    return lambda values: [convert(value) for value in values]


def _whole(value: Any) -> int:
    """``value`` as it may appear in SQL text: an ``int`` and nothing else."""
    if type(value) is not int:
        raise TypeError(f"a number written into SQL must be an int, not {value!r}")
    return value


def columns_of(model: Any, struct: type[Any]) -> list[Any]:
    """``model``'s columns named like ``struct``'s fields, in field order: the rows of
    ``select(*columns_of(Agent, schemas.Agent))`` go straight into ``schemas.Agent``."""
    return [getattr(model, name) for name in struct.__struct_fields__]


def escape_like(text: str) -> str:
    """``text`` matched literally by ``LIKE ... ESCAPE '\\'`` (its ``%`` and ``_`` are
    not wildcards): ``column.ilike(bindparam("pattern"), escape="\\")`` with
    ``pattern=f"%{escape_like(q)}%"`` finds ``q`` anywhere, ignoring case."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def count_of(model: Any, *conditions: Any) -> AnySelect:
    """``SELECT count(*) FROM model WHERE conditions``: the ``total`` of :class:`Paged`."""
    return select(func.count()).select_from(model).where(*conditions)
