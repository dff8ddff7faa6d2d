"""A batch's writes on the driver: SQL built once per dialect, rows as plain tuples.

SQLAlchemy's ``executemany`` turns each row's dict into the driver's parameters in
Python, which costs more than SQLite takes to store the row, and PostgreSQL gets the
rows one by one. The writes of :mod:`tollway_link.store` instead build their SQL once
per dialect from the tables and pass each row as a tuple of its table's columns, in
order: on SQLite as one ``executemany`` (one prepared statement run over them all), on
PostgreSQL as one JSON document, an array of the rows as arrays, that the server
takes apart with ``jsonb_array_elements``, so a table costs one statement and one round
trip whatever the batch's size. (One array parameter per column was the first way:
asyncpg checks every element of an array against the abstract collection types, in
Python, which cost a batch's writer ten times the client time of encoding the rows
as JSON in C, and the server took longer to unnest the arrays than to read the JSON.)
Each batch holds a key once (the store adds up its rows first), as ``ON CONFLICT DO
UPDATE`` requires of one statement on PostgreSQL.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, cast

import msgspec
from sqlalchemy import Table
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from tollway_link.models import Breakdown, Click, DayVisitors, Link, Traffic, Visit, VisitorBounds

Row = tuple[Any, ...]

SQLITE_ROWS = 1000
"""Rows per multi-row ``VALUES`` on SQLite: 9 columns stay under its 32,766 parameters."""


def table(model: Any) -> Table:
    return cast(Table, model.__table__)


def _names(names: Iterable[str]) -> str:
    return ", ".join(names)


def _rows(columns: Sequence[Any], dialect: Dialect) -> str:
    """PostgreSQL's rows of ``columns`` from the JSON parameter ``$1``: an array of rows,
    each an array of its values in the order of ``columns``."""
    values = (
        f"(item->>{at})::{column.type.compile(dialect=dialect)} AS {column.name}"
        for at, column in enumerate(columns)
    )
    return f"SELECT {_names(values)} FROM jsonb_array_elements($1::jsonb) AS item"


def _insert(model: Any, dialect: Dialect) -> str:
    """``INSERT`` of the table's columns, from the JSON rows on PostgreSQL."""
    if dialect.name == "postgresql":
        columns = table(model).c
        return f"{_into(model)} {_rows(list(columns), dialect)}"
    return _sqlite_insert(model, 1)


def _into(model: Any) -> str:
    return f"INSERT INTO {table(model).name} ({_names(table(model).c.keys())})"


@functools.cache
def _sqlite_insert(model: Any, rows: int) -> str:
    """``INSERT`` of the table's columns, ``rows`` rows of ``VALUES``."""
    row = f"({_names('?' * len(table(model).c))})"
    return f"{_into(model)} VALUES {_names([row] * rows)}"


def _adding(model: Any, column: str, dialect: Dialect) -> str:
    """The upsert adding a row's ``column`` to the stored row of its key."""
    name = table(model).name
    keys = _names(key.name for key in table(model).primary_key)
    return (
        f"{_insert(model, dialect)} ON CONFLICT ({keys}) DO UPDATE"
        f" SET {column} = {name}.{column} + excluded.{column}"
    )


def _update(model: Any, given: Sequence[str], assignment: str, dialect: Dialect) -> str:
    """``UPDATE`` of the stored rows of the batch's keys. A batch row holds the values
    of the table's ``given`` columns, its primary key among them; ``assignment``
    refers to them as ``{name}``."""
    name = table(model).name
    if dialect.name == "postgresql":
        values = {column: f"batch.{column}" for column in given}
        source = f" FROM ({_rows([table(model).c[column] for column in given], dialect)}) AS batch"
    else:
        values = {column: f"?{at}" for at, column in enumerate(given, 1)}
        source = ""
    where = " AND ".join(
        f"{name}.{key.name} = {values[key.name]}" for key in table(model).primary_key
    )
    return f"UPDATE {name} SET {assignment.format_map(values)}{source} WHERE {where}"


@dataclass(frozen=True, slots=True)
class Writes:
    """A dialect's batch writes; each takes rows as tuples of its table's columns."""

    postgresql: bool
    """The rows go as one JSON document."""
    insert_clicks: str
    add_traffic: str
    add_breakdown: str
    add_day_visitors: str
    add_visitor_bounds: str
    insert_visits: str
    count_clicks: str
    """Rows ``(link_id, clicks added)``."""
    count_visits: str
    """Rows ``(link_id, visitor, bucket)`` of buckets that get a person's click."""

    async def run(self, connection: AsyncConnection, sql: str, rows: Sequence[Row]) -> None:
        if not rows:
            return
        if self.postgresql:
            await connection.exec_driver_sql(sql, (json_rows(rows),))
        else:
            await connection.exec_driver_sql(sql, list(rows))

    async def insert_new_clicks(self, connection: AsyncConnection, rows: Sequence[Row]) -> set[str]:
        """Insert the clicks, ``ON CONFLICT (id) DO NOTHING``; the ids that were new.

        SQLite returns nothing from ``executemany``: its rows go as multi-row
        ``VALUES``, whose SQL differs by the number of rows."""
        new_ids = " ON CONFLICT (id) DO NOTHING RETURNING id"
        if self.postgresql:
            sql = self.insert_clicks + new_ids
            return set((await connection.exec_driver_sql(sql, (json_rows(rows),))).scalars())
        new: set[str] = set()
        for start in range(0, len(rows), SQLITE_ROWS):
            chunk = rows[start : start + SQLITE_ROWS]
            sql = _sqlite_insert(Click, len(chunk)) + new_ids
            new.update((await connection.exec_driver_sql(sql, tuple(chain(*chunk)))).scalars())
        return new


_encode = msgspec.json.Encoder().encode


def json_rows(rows: Sequence[Row]) -> str:
    """The rows as one JSON parameter, each an array (datetimes in RFC 3339, which
    ``timestamptz`` reads): PostgreSQL's writes, and the visitor lookups on both
    backends."""
    return _encode(rows).decode()


_WRITES: dict[str, Writes] = {}


def writes(dialect: Dialect) -> Writes:
    """The batch writes in ``dialect``'s SQL, built on first use."""
    found = _WRITES.get(dialect.name)
    if found is None:
        found = _WRITES[dialect.name] = Writes(
            postgresql=dialect.name == "postgresql",
            insert_clicks=_insert(Click, dialect),
            add_traffic=_adding(Traffic, "clicks", dialect),
            add_breakdown=_adding(Breakdown, "clicks", dialect),
            add_day_visitors=_adding(DayVisitors, "visitors", dialect),
            add_visitor_bounds=_adding(VisitorBounds, "visitors", dialect),
            insert_visits=_insert(Visit, dialect),
            count_clicks=_update(
                Link, ["id", "clicks"], "clicks = link_links.clicks + {clicks}", dialect
            ),
            count_visits=_update(Visit, ["link_id", "visitor", "bucket"], "bot = false", dialect),
        )
    return found
