"""The read path: one statement, one round trip, rows straight into the wire's types.

A request that only reads has no use for a transaction, an ORM identity map or a
commit. :class:`Reads` runs one Core ``SELECT`` per call, outside any transaction
(each statement sees a consistent snapshot of its own), and hands each row's columns,
in order, to ``into``: a msgspec Struct whose fields are the selected columns, or a
function building one. A list and its total come from one statement
(:class:`Paged`). Statements are built once, with ``bindparam`` for the values of a
request, and executed with those values.

On PostgreSQL the statement runs on the gateway's async engine in autocommit mode:
no ``BEGIN``, no ``COMMIT``, no reset round trip. On SQLite it runs on a synchronous
``sqlite3`` connection in a small thread pool, so a read costs one hop to a thread,
where aiosqlite makes one per cursor operation (open, execute, fetch, close) and
two more for the transaction around it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeAlias, TypeVar

from sqlalchemy import Engine, Row, Select, create_engine, event, func, select
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

T = TypeVar("T")
AnySelect: TypeAlias = Select[*tuple[Any, ...]]

READ_THREADS = 4
"""SQLite readers run beside each other (WAL) in up to this many threads."""


class Reads:
    """Read-only statements for one database, each in one round trip."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        sqlite_url: URL | None = None,
        on_connect: Callable[[Any, Any], None] | None = None,
    ) -> None:
        """``engine`` is the gateway's; with ``sqlite_url`` reads go to a synchronous
        engine on that file instead, whose new connections get ``on_connect``."""
        self._engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._sync: Engine | None = None
        self._threads: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        if sqlite_url is not None:
            self._sync = create_engine(
                sqlite_url.set(drivername="sqlite+pysqlite"),
                connect_args={"check_same_thread": False},
                pool_size=READ_THREADS,
                max_overflow=0,
            )
            if on_connect is not None:
                event.listen(self._sync, "connect", on_connect)

    async def _rows(self, statement: AnySelect, params: dict[str, Any]) -> Sequence[Row[Any]]:
        if self._sync is None:
            async with self._engine.connect() as connection:
                rows: Sequence[Row[Any]] = (await connection.execute(statement, params)).all()
                return rows
        return await asyncio.get_running_loop().run_in_executor(
            self._executor(), self._sync_rows, statement, params
        )

    def _sync_rows(self, statement: AnySelect, params: dict[str, Any]) -> Sequence[Row[Any]]:
        assert self._sync is not None
        with self._sync.connect() as connection:
            return connection.execute(statement, params).all()

    def _executor(self) -> ThreadPoolExecutor:
        if self._threads is None:
            with self._lock:
                if self._threads is None:
                    self._threads = ThreadPoolExecutor(
                        READ_THREADS, thread_name_prefix="tollway-reads"
                    )
        return self._threads

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

    def dispose(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None
        if self._sync is not None:
            self._sync.dispose()


class Paged:
    """A page and the total it is a page of, as one statement: the count rides along as
    a last column, computed once. Build it once (at import, or cached per variant of
    the filters) and pass the values as bound parameters: a statement built anew for
    every request costs more to build and to look up in SQLAlchemy's compiled cache
    than the database takes to run it."""

    def __init__(self, statement: AnySelect, total: AnySelect) -> None:
        """``statement`` selects the page (ordered, with its offset and limit);
        ``total`` counts the rows it pages through (:func:`count_of`)."""
        self.statement = statement.add_columns(total.scalar_subquery().label("total"))
        self.total = total


def columns_of(model: Any, struct: type[Any]) -> list[Any]:
    """``model``'s columns named like ``struct``'s fields, in field order: the rows of
    ``select(*columns_of(Agent, schemas.Agent))`` go straight into ``schemas.Agent``."""
    return [getattr(model, name) for name in struct.__struct_fields__]


def count_of(model: Any, *conditions: Any) -> AnySelect:
    """``SELECT count(*) FROM model WHERE conditions``: the ``total`` of :meth:`Reads.page`."""
    return select(func.count()).select_from(model).where(*conditions)
