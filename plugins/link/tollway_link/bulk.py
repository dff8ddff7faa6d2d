"""A batch's writes and reads on the driver: SQL built once per dialect, one JSON
document each way.

A batch crosses to the database as one JSON document per statement, an array of its
rows as arrays, that the database takes apart (``jsonb_array_elements`` on PostgreSQL,
``json_each`` on SQLite); what a batch reads comes back the same way, one JSON array of
rows (:func:`document`). So a table costs one statement, and one value each way,
whatever the batch's size:

- on PostgreSQL, one round trip, and no per-element work in the driver (one array
  parameter per column was the first way: asyncpg checks every element of an array
  against the abstract collection types, in Python, which cost a batch's writer ten
  times the client time of encoding the rows as JSON in C);
- on SQLite, one step of the statement. Python's sqlite3 gives up the GIL for every
  step, one per row given to ``executemany`` and one per row fetched, and then needs it
  back from the event loop's thread: on a busy gateway each of those waits for the
  loop to let go (milliseconds, not microseconds). An ``executemany`` of 5,000 rows
  measured 2.8 to 11 s beside a busy loop, the same rows as one JSON document 50 to
  70 ms (docs/benchmarks.md); unloaded, the JSON costs about 1 µs a row more.

SQLAlchemy's ``executemany`` would turn each row's dict into the driver's parameters in
Python besides. Each batch holds a key once (the store adds up its rows first), as
``ON CONFLICT DO UPDATE`` requires of one statement on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import msgspec
from sqlalchemy import Select, String, Table, Text, bindparam, func, literal_column, select
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

from tollway import Write
from tollway_link.models import Breakdown, Click, Link, Traffic, Visit, VisitGaps, VisitorBounds

Row = tuple[Any, ...]


def table(model: Any) -> Table:
    return cast(Table, model.__table__)


def _names(names: Iterable[str]) -> str:
    return ", ".join(names)


def _value(at: int, kind: str, dialect: str) -> str:
    """Value ``at`` of the JSON row ``item``, as SQL: cast to ``kind`` on PostgreSQL
    (SQLite's columns take the value as it comes)."""
    if dialect == "postgresql":
        return f"(item->>{at})::{kind}"
    return f"json_extract(item.value, '$[{at}]')"


def _rows(columns: Sequence[Any], dialect: Dialect) -> str:
    """The rows of ``columns`` from the statement's one parameter, a JSON array of rows,
    each an array of its values in the order of ``columns``."""
    values = _names(
        f"{_value(at, column.type.compile(dialect=dialect), dialect.name)} AS {column.name}"
        for at, column in enumerate(columns)
    )
    if dialect.name == "postgresql":
        return f"SELECT {values} FROM jsonb_array_elements($1::jsonb) AS item"
    # WHERE true: without it, SQLite reads an upsert's ON CONFLICT as the ON of a join.
    return f"SELECT {values} FROM json_each(?) AS item WHERE true"


def json_table(parameter: str, columns: dict[str, str], dialect: str) -> Any:
    """The rows of the JSON parameter ``parameter`` as a table for SQLAlchemy's
    statements (what :func:`_rows` is to the writes): ``columns`` maps each name to its
    PostgreSQL type, in the order of the rows' values."""
    json = bindparam(parameter, type_=String)
    if dialect == "postgresql":
        item = func.jsonb_array_elements(sql_cast(json, postgresql.JSONB)).alias("item")
    else:
        item = func.json_each(json).alias("item")
    named: list[Any] = [
        literal_column(_value(at, kind, dialect)).label(name)
        for at, (name, kind) in enumerate(columns.items())
    ]
    return select(*named).select_from(item).subquery(parameter)


def _insert(model: Any, dialect: Dialect) -> str:
    """``INSERT`` of the table's columns, from the JSON rows."""
    return f"INSERT INTO {table(model).name} ({_names(table(model).c.keys())}) " + _rows(
        list(table(model).c), dialect
    )


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
    rows = _rows([table(model).c[column] for column in given], dialect)
    keys = (key.name for key in table(model).primary_key)
    where = " AND ".join(f"{name}.{key} = batch.{key}" for key in keys)
    values = {column: f"batch.{column}" for column in given}
    return f"UPDATE {name} SET {assignment.format_map(values)} FROM ({rows}) AS batch WHERE {where}"


@dataclass(frozen=True, slots=True)
class Writes:
    """A dialect's batch writes; each takes rows as tuples of its table's columns."""

    postgresql: bool
    """New clicks are told apart by ``RETURNING``."""
    insert_clicks: str
    add_traffic: str
    add_breakdown: str
    add_visit_gaps: str
    add_visitor_bounds: str
    insert_visits: str
    count_clicks: str
    """Rows ``(link_id, clicks added)``."""
    count_visits: str
    """Rows ``(link_id, visitor, bucket)`` of buckets that get a person's click."""

    def write(self, sql: str, rows: Sequence[Row]) -> list[Write]:
        """``sql`` over ``rows``, as :meth:`tollway.Database.run_writes` takes it: one
        JSON document; nothing when there are no rows."""
        return [(sql, (json_rows(rows),))] if rows else []

    async def new_clicks(
        self, connection: AsyncConnection, rows: Sequence[Row]
    ) -> tuple[set[str], list[Write]]:
        """The ids of the clicks not stored yet, and the writes still to run to store
        them.

        On PostgreSQL they are stored here, ``ON CONFLICT (id) DO NOTHING RETURNING
        id``. On SQLite, whose ``RETURNING`` is a step per row, the stored ones are
        looked up, as one document, and the rest left to insert with the batch's other
        writes: the store holds the write lock from the start of its transaction, so no
        click can be stored in between."""
        if self.postgresql:
            sql = self.insert_clicks + " ON CONFLICT (id) DO NOTHING RETURNING id"
            inserted = await connection.exec_driver_sql(sql, (json_rows(rows),))
            return set(inserted.scalars()), []
        ids = json_rows([row[0] for row in rows])
        stored = await connection.exec_driver_sql(_SQLITE_STORED_CLICKS, (ids,))
        known = set(_decode(stored.scalar_one()))
        new = [row for row in rows if row[0] not in known]
        return {row[0] for row in new}, self.write(self.insert_clicks, new)


_SQLITE_STORED_CLICKS = (
    f"SELECT json_group_array(stored.id) FROM json_each(?) AS item"
    f" JOIN {table(Click).name} AS stored ON stored.id = item.value"
)
"""The stored ones of a flat JSON array of click ids (each taken as it is, not from a
one-value row: that join costs a quarter of :func:`json_table`'s)."""


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(list[Any]).decode


def json_rows(rows: Sequence[Any]) -> str:
    """The rows as one JSON parameter, each an array (datetimes in RFC 3339, which
    ``timestamptz`` reads): every write of a batch, and the keys its reads look up."""
    return _encode(rows).decode()


def document(query: Select[Any], dialect: str) -> Select[tuple[str]]:
    """``query``'s rows as one value, a JSON array of arrays (:func:`rows_of` reads it):
    on SQLite one step instead of one per row. Booleans come back as ``0`` and ``1``
    from SQLite."""
    rows = query.subquery("rows")
    if dialect == "postgresql":
        array = func.json_agg(func.json_build_array(*rows.c))
        # As text: the driver would decode json itself, with the json module.
        return select(sql_cast(func.coalesce(array, literal_column("'[]'")), Text))
    return select(func.json_group_array(func.json_array(*rows.c), type_=String))


def rows_of(value: str) -> list[Any]:
    """The rows of a :func:`document`, each a list."""
    return _decode(value)


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
            add_visit_gaps=_adding(VisitGaps, "visitors", dialect),
            add_visitor_bounds=_adding(VisitorBounds, "visitors", dialect),
            insert_visits=_insert(Visit, dialect),
            count_clicks=_update(
                Link, ["id", "clicks"], "clicks = link_links.clicks + {clicks}", dialect
            ),
            count_visits=_update(Visit, ["link_id", "visitor", "bucket"], "bot = false", dialect),
        )
    return found
