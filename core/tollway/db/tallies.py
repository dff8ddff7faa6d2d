"""Exact totals without counting: row counts kept by the database's own triggers.

A list's ``total`` as ``count(*)`` reads every row it counts: on PostgreSQL, some
0.5 ms per list of 10,000 rows, on every request, for a number that changes only when
a row is written. A :class:`Tally` keeps the count of a table's rows per group of
some of its columns (per account and status, say) in a counts table, one row per
group, and a list sums the few counts rows its filters match instead.

The counts are kept by triggers on the counted table, in the writing transaction: an
insert adds one to the new row's group, a delete takes one from the old row's, and an
update that changes a grouping column moves the row from one group to the other. So
they are exact whatever writes the rows (the ORM, Core statements, a foreign key's
``CASCADE`` or ``SET NULL``, an account's deletion), no product code has to remember
them, and a statement reading rows and counts sees both in the same snapshot. An
update touching no grouping column (a message bumping ``last_activity_at``) does not
fire them at all.

The cost is on the writes: each writing transaction updates one counts row per group
it touches and holds that row's lock until it commits, so concurrent inserts of the
same group (one account's rows of one status) take turns on it. A tally suits totals
that are read far more often than their groups are written at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Dialect, column, func, select, table

from tollway.db.reads import AnySelect

COUNT = "n"
"""The counts table's column holding each group's count."""


class Tally:
    """The count of ``source``'s rows per distinct value of ``by``, kept in the table
    ``name``.

    The counts table is a migration's to create and a model's to declare, like any
    table: the ``by`` columns, ``NOT NULL``, as its primary key, and an integer ``n``.
    Its foreign key to the accounts (the first ``by`` column, usually) is ``ON DELETE
    CASCADE`` like the source's, so an account's counts go with it. Other grouping
    columns carry no foreign key: the group of a deleted inbox simply counts 0.

    A ``by`` column that may be ``NULL`` in the source is stored as its value in
    ``nulls`` instead (``0`` for an id, which starts at 1): a unique index never finds
    two ``NULL`` groups equal, so they could not be counted in one row. A condition
    asking for that value (:meth:`total`) counts the source's ``NULL`` rows.

    Everything is named explicitly, so a migration (a frozen file) states its own
    tally rather than reading the live models.
    """

    def __init__(
        self,
        name: str,
        source: str,
        by: Sequence[str],
        *,
        nulls: Mapping[str, int | str] | None = None,
    ) -> None:
        self.name = name
        self.source = source
        self.by = tuple(by)
        self.nulls = dict(nulls or {})
        unknown = set(self.nulls) - set(self.by)
        if unknown:
            raise ValueError(f"nulls names columns {sorted(unknown)} that {name} is not grouped by")
        self.table = table(name, *(column(each) for each in (*self.by, COUNT)))
        """The counts table, for statements of one's own."""

    def total(self, **equal: Any) -> AnySelect:
        """``coalesce(sum(n), 0)`` over the groups whose columns equal ``equal``'s
        values (bound parameters, usually): the number of source rows matching the
        same conditions, as :class:`~tollway.db.reads.Paged`'s ``total``. The counts
        table's primary key starts with the first ``by`` column; conditions on it
        (the account) keep the sum to that account's few groups."""
        unknown = set(equal) - set(self.by)
        if unknown:
            raise ValueError(f"{self.name} is not grouped by {sorted(unknown)}")
        counts = self.table.c
        return select(func.coalesce(func.sum(counts[COUNT]), 0)).where(
            *(counts[name] == value for name, value in equal.items())
        )

    def install(self, connection: Connection) -> None:
        """Create the triggers, then count the rows already there (the counts table,
        which must exist, is emptied first). On PostgreSQL ``CREATE TRIGGER`` locks
        the source against writes until the transaction ends, so no write falls
        between the triggers and the count; SQLite has one writer anyway.

        A migration that recreates the source table (SQLite's ``batch_alter_table``)
        drops its triggers: :meth:`uninstall` before it and install again after."""
        triggers = _TRIGGERS.get(connection.dialect.name)
        if triggers is None:
            raise NotImplementedError(
                f"tallies run on PostgreSQL and SQLite, not {connection.dialect.name}"
            )
        quote = _Quoting(self, connection.dialect)
        groups = ", ".join(quote.group(None))
        for statement in (
            *triggers(quote),
            f"DELETE FROM {quote.counts}",
            f"INSERT INTO {quote.counts} ({quote.columns}, {COUNT}) "
            f"SELECT {groups}, count(*) FROM {quote.source} GROUP BY {groups}",
        ):
            connection.exec_driver_sql(statement)  # as written: no bind parameters parsed

    def uninstall(self, connection: Connection) -> None:
        """Drop the triggers (and PostgreSQL's trigger function); the counts table is
        the migration's to drop. Dropping what is already gone is not an error."""
        quote = _Quoting(self, connection.dialect)
        on = f" ON {quote.source}" if connection.dialect.name == "postgresql" else ""
        for event in _EVENTS:
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {quote.trigger(event)}{on}")
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"DROP FUNCTION IF EXISTS {quote.function}()")


_EVENTS = ("insert", "delete", "update")


class _Quoting:
    """A tally's names and expressions as one dialect writes them."""

    def __init__(self, tally: Tally, dialect: Dialect) -> None:
        self.tally = tally
        self.quote = dialect.identifier_preparer.quote
        self.counts = self.quote(tally.name)
        self.source = self.quote(tally.source)
        self.columns = ", ".join(self.quote(name) for name in tally.by)
        self.function = self.quote(f"{tally.name}_count")

    def trigger(self, event: str) -> str:
        return self.quote(f"{self.tally.name}_{event}")

    def group(self, row: str | None) -> list[str]:
        """The group of ``row`` (``NEW``, ``OLD``, or the source's own columns), each
        nullable column through ``COALESCE`` with its stand-in."""
        values = []
        for name in self.tally.by:
            value = self.quote(name) if row is None else f"{row}.{self.quote(name)}"
            if name in self.tally.nulls:
                value = f"COALESCE({value}, {_literal(self.tally.nulls[name])})"
            values.append(value)
        return values

    def increment(self) -> str:
        """One more in the new row's group; its counts row is made by the first."""
        return (
            f"INSERT INTO {self.counts} ({self.columns}, {COUNT}) "
            f"VALUES ({', '.join(self.group('NEW'))}, 1) "
            f"ON CONFLICT ({self.columns}) DO UPDATE SET {COUNT} = {self.counts}.{COUNT} + 1"
        )

    def decrement(self) -> str:
        """One fewer in the old row's group. Never an insert: when an account is
        deleted its counts rows may go before its rows do, and a new counts row would
        then refer to an account that is gone."""
        matches = " AND ".join(
            f"{self.quote(name)} = {value}"
            for name, value in zip(self.tally.by, self.group("OLD"), strict=True)
        )
        return f"UPDATE {self.counts} SET {COUNT} = {COUNT} - 1 WHERE {matches}"

    def changed(self, differ: str) -> str:
        """Whether an update changed a grouping column (``NULL`` to ``NULL`` does not)."""
        return " OR ".join(
            f"OLD.{self.quote(name)} {differ} NEW.{self.quote(name)}" for name in self.tally.by
        )


def _literal(value: int | str) -> str:
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("'", "''") + "'"


def _postgresql(quote: _Quoting) -> list[str]:
    """One PL/pgSQL function behind three row triggers. A row moving between groups
    locks their two counts rows in the order of the groups, so two transactions moving
    rows between the same two groups in opposite directions never deadlock."""
    old, new = ", ".join(quote.group("OLD")), ", ".join(quote.group("NEW"))
    body = f"""
BEGIN
    IF TG_OP = 'INSERT' THEN
        {quote.increment()};
    ELSIF TG_OP = 'DELETE' THEN
        {quote.decrement()};
    ELSIF ROW({old}) < ROW({new}) THEN
        {quote.decrement()};
        {quote.increment()};
    ELSE
        {quote.increment()};
        {quote.decrement()};
    END IF;
    RETURN NULL;
END
"""
    run = f"FOR EACH ROW EXECUTE FUNCTION {quote.function}()"
    return [
        f"CREATE FUNCTION {quote.function}() RETURNS trigger LANGUAGE plpgsql "
        f"AS $tally${body}$tally$",
        f"CREATE TRIGGER {quote.trigger('insert')} AFTER INSERT ON {quote.source} {run}",
        f"CREATE TRIGGER {quote.trigger('delete')} AFTER DELETE ON {quote.source} {run}",
        f"CREATE TRIGGER {quote.trigger('update')} AFTER UPDATE OF {quote.columns} "
        f"ON {quote.source} FOR EACH ROW WHEN ({quote.changed('IS DISTINCT FROM')}) "
        f"EXECUTE FUNCTION {quote.function}()",
    ]


def _sqlite(quote: _Quoting) -> list[str]:
    """Three triggers. ``UPDATE OF`` fires whenever a grouping column is set, changed
    or not; ``WHEN`` keeps the unchanged ones out."""
    source = quote.source
    return [
        f"CREATE TRIGGER {quote.trigger('insert')} AFTER INSERT ON {source} "
        f"BEGIN {quote.increment()}; END",
        f"CREATE TRIGGER {quote.trigger('delete')} AFTER DELETE ON {source} "
        f"BEGIN {quote.decrement()}; END",
        f"CREATE TRIGGER {quote.trigger('update')} AFTER UPDATE OF {quote.columns} ON {source} "
        f"WHEN {quote.changed('IS NOT')} BEGIN {quote.decrement()}; {quote.increment()}; END",
    ]


_TRIGGERS: dict[str, Callable[[_Quoting], list[str]]] = {
    "postgresql": _postgresql,
    "sqlite": _sqlite,
}
