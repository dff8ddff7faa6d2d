"""The kit's data path: reads in one statement into Structs, SQLite statements in one
thread hop with writers taking turns, and pooled connections pinged only when idle."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import aiosqlite
import msgspec
import pytest
from sqlalchemy import (
    Float,
    Integer,
    Numeric,
    String,
    bindparam,
    cast,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from tollway import PAGE_LIMIT, PAGE_OFFSET, Paged, columns_of, count_of
from tollway.db import Database, UTCDateTime, unavailable
from tollway.db import database as database_module
from tollway.db import sqlite as sqlite_module
from tollway.testing import Backend

START = datetime(2026, 1, 1, tzinfo=UTC)


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "test_data_path_items"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(Integer, index=True)
    name: Mapped[str] = mapped_column(String(50))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ItemView(msgspec.Struct):
    id: int
    name: str
    created_at: datetime


ACCOUNT = bindparam("account_id")
_OWNED = Item.account_id == ACCOUNT
PAGE = Paged(
    select(*columns_of(Item, ItemView))
    .where(_OWNED)
    .order_by(Item.id)
    .offset(PAGE_OFFSET)
    .limit(PAGE_LIMIT),
    count_of(Item, _OWNED),
)
ONE = select(*columns_of(Item, ItemView)).where(Item.id == bindparam("id"), _OWNED)


@pytest.fixture
async def database(backend: Backend) -> AsyncIterator[Database]:
    database = Database(backend.database_url)
    async with database.engine.begin() as connection:
        await connection.run_sync(Base.metadata.drop_all)
        await connection.run_sync(Base.metadata.create_all)
        await connection.execute(
            insert(Item),
            [
                {
                    "account_id": 1 if n < 30 else 2,
                    "name": f"item {n}",
                    "created_at": START + timedelta(minutes=n),
                }
                for n in range(35)
            ],
        )
    try:
        yield database
    finally:
        async with database.engine.begin() as connection:
            await connection.run_sync(Base.metadata.drop_all)
        await database.dispose()


async def test_a_page_and_its_total_come_from_one_statement(database: Database) -> None:
    items, total = await database.reads.page(PAGE, ItemView, account_id=1, offset=10, limit=5)
    assert total == 30
    assert [item.id for item in items] == [11, 12, 13, 14, 15]
    assert items[0] == ItemView(11, "item 10", START + timedelta(minutes=10))
    # The column types still apply: times come back aware, in UTC.
    assert items[0].created_at.tzinfo is not None

    other, other_total = await database.reads.page(PAGE, ItemView, account_id=2, offset=0, limit=50)
    assert (len(other), other_total) == (5, 5)


async def test_a_page_past_the_end_still_has_its_total(database: Database) -> None:
    assert await database.reads.page(PAGE, ItemView, account_id=1, offset=30, limit=5) == (
        [],
        30,
    )
    assert await database.reads.page(PAGE, ItemView, account_id=9, offset=0, limit=5) == ([], 0)


async def test_a_pages_offset_and_limit_must_be_whole_numbers(database: Database) -> None:
    """They are written into the SQL: anything but an ``int`` is refused, not quoted."""
    for offset in ("0; DROP TABLE test_data_path_items", 1.5, True, None):
        with pytest.raises(TypeError, match="must be an int"):
            await database.reads.page(PAGE, ItemView, account_id=1, offset=offset, limit=5)
    assert (await database.reads.page(PAGE, ItemView, account_id=1, offset=0, limit=1))[1] == 30


async def test_first_all_and_scalar(database: Database) -> None:
    reads = database.reads
    assert await reads.first(ONE, ItemView, id=3, account_id=1) == ItemView(
        3, "item 2", START + timedelta(minutes=2)
    )
    # Another account's row is simply not found.
    assert await reads.first(ONE, ItemView, id=3, account_id=2) is None
    names = await reads.all(
        select(Item.name).where(_OWNED).order_by(Item.id.desc()), str, account_id=2
    )
    assert names == [f"item {n}" for n in range(34, 29, -1)]
    assert await reads.scalar(select(func.max(Item.id)).where(_OWNED), account_id=1) == 30
    # Floats and numerics, which asyncpg's dialect cannot convert before a statement ran.
    half = select(cast(func.avg(Item.id), Float)).where(_OWNED)
    assert await reads.scalar(half, account_id=1) == 15.5
    exact = select(cast(func.avg(Item.id), Numeric(10, 2))).where(_OWNED)
    assert await reads.scalar(exact, account_id=1) == Decimal("15.50")


async def test_literals_typed_parameters_and_expanded_lists(database: Database) -> None:
    reads = database.reads
    # A literal in the statement, and a datetime converted on its way to the database.
    since = select(Item.id).where(
        _OWNED, Item.created_at >= bindparam("since"), Item.name != "item 28"
    )
    ids = await reads.all(
        since.order_by(Item.id), int, account_id=1, since=START + timedelta(minutes=27)
    )
    assert ids == [28, 30]
    # A list SQLAlchemy expands when the statement runs.
    listed = select(Item.id).where(Item.id.in_(bindparam("ids", expanding=True))).order_by(Item.id)
    assert await reads.all(listed, int, ids=[2, 4, 40]) == [2, 4]


async def test_reads_see_what_was_committed_since(database: Database) -> None:
    statement = select(func.count()).select_from(Item).where(_OWNED)
    assert await database.reads.scalar(statement, account_id=3) == 0
    async with database.transaction() as session:
        await session.execute(insert(Item).values(account_id=3, name="new", created_at=START))
    assert await database.reads.scalar(statement, account_id=3) == 1


async def test_run_writes_runs_each_in_order_in_the_transaction(database: Database) -> None:
    """Every backend: the writes see each other, commit with the transaction and roll
    back with it, and a failing one raises what SQLAlchemy raises for the driver."""
    table = Item.__table__.name
    insert_sql = f"INSERT INTO {table} (id, account_id, name, created_at) VALUES "
    placeholders = "($1, $2, $3, $4)" if not database.is_sqlite else "(?, ?, ?, ?)"
    rename = f"UPDATE {table} SET name = name || '!' WHERE id = " + (
        "$1" if not database.is_sqlite else "?"
    )
    stamp = "2026-01-01 00:00:00.000000" if database.is_sqlite else START
    async with database.transaction() as session:
        connection = await session.connection()
        await database.run_writes(
            connection,
            [(insert_sql + placeholders, (100, 1, "hundred", stamp)), (rename, (100,))],
        )
    assert await database.reads.all(select(Item.name).where(Item.id == 100), str) == ["hundred!"]

    failing = [(rename, (100,)), (insert_sql + placeholders, (100, 1, "again", stamp))]

    async def rename_then_insert_again() -> None:
        async with database.transaction() as session:
            await database.run_writes(await session.connection(), failing)

    with pytest.raises(IntegrityError):
        await rename_then_insert_again()
    # The failed transaction left nothing: the rename before the failure rolled back.
    assert await database.reads.all(select(Item.name).where(Item.id == 100), str) == ["hundred!"]


# SQLite -------------------------------------------------------------------------------


@pytest.fixture
async def sqlite_database(tmp_path: Any) -> Database:
    database = Database(f"sqlite+aiosqlite:///{tmp_path}/data-path.db")
    async with database.engine.begin() as connection:
        await connection.run_sync(Base.metadata.create_all)
    return database


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first word of every statement that reaches SQLite's thread from now on (a
    new connection's PRAGMAs left out); a statement run on the event loop's thread is
    marked ``(loop)``."""
    seen: list[str] = []
    original = sqlite_module._execute

    def counted(connection: Any, operation: str, parameters: Any, many: bool) -> Any:
        if not operation.startswith("PRAGMA"):
            on_loop = threading.current_thread() is threading.main_thread()
            seen.append(operation.split()[0] + (" (loop)" if on_loop else ""))
        return original(connection, operation, parameters, many)

    monkeypatch.setattr(sqlite_module, "_execute", counted)
    return seen


@pytest.fixture
def ends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The commits and rollbacks that reach SQLite's thread from now on."""
    seen: list[str] = []
    original = aiosqlite.Connection._execute

    def counted(self: aiosqlite.Connection, function: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(function, "__name__", "") in ("commit", "rollback"):
            seen.append(function.__name__)
        return original(self, function, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    return seen


async def test_a_sqlite_statement_is_one_trip_to_the_thread_until_the_write_lock(
    sqlite_database: Database, trips: list[str], ends: list[str]
) -> None:
    """Once the first write holds the write lock, the transaction's statements run on
    the loop; the commit goes to the thread."""
    database = sqlite_database
    try:
        async with database.transaction() as session:
            await session.execute(select(Item.id))
            inserted = await session.execute(
                insert(Item).values(account_id=1, name="a", created_at=START).returning(Item.id)
            )
            first_id = inserted.scalar_one()
            connection = await session.connection()
            many = await connection.execute(
                insert(Item),
                [{"account_id": 1, "name": n, "created_at": START} for n in "bcd"],
            )
            assert many.rowcount == 3
            changed = await connection.execute(
                update(Item).where(Item.account_id == 1).values(name="z")
            )
            assert changed.rowcount == 4
            names = (await session.execute(select(Item.name).order_by(Item.id))).scalars()
            assert list(names) == ["z"] * 4
        assert first_id == 1
        assert trips == ["SELECT", "INSERT", "INSERT (loop)", "UPDATE (loop)", "SELECT (loop)"]
        assert ends == ["commit"]
        # The next transaction starts on the thread again, and sees the commit.
        trips.clear()
        async with database.transaction() as session:
            assert await session.scalar(select(func.count()).select_from(Item)) == 4
        assert trips == ["SELECT"]
    finally:
        await database.dispose()


async def _read_then_fail(database: Database) -> None:
    async with database.transaction() as session:
        await session.execute(select(Item.id))
        raise RuntimeError("changed my mind")


async def _insert_twice(database: Database, item_id: int) -> None:
    async with database.transaction() as session:
        for name in "ab":
            await session.execute(
                insert(Item).values(id=item_id, account_id=1, name=name, created_at=START)
            )


async def test_a_transaction_that_only_read_ends_without_a_trip(
    sqlite_database: Database, trips: list[str], ends: list[str]
) -> None:
    database = sqlite_database
    try:
        async with database.transaction() as session:
            await session.execute(select(Item.id))
        with pytest.raises(RuntimeError, match="changed my mind"):
            await _read_then_fail(database)
        assert trips == ["SELECT", "SELECT"]
        assert ends == []
    finally:
        await database.dispose()


async def test_a_failed_statement_on_the_loop_rolls_back_the_transaction(
    sqlite_database: Database, trips: list[str], ends: list[str]
) -> None:
    database = sqlite_database
    try:
        with pytest.raises(IntegrityError):
            await _insert_twice(database, item_id=1)
        assert trips == ["INSERT", "INSERT (loop)"]
        assert ends == ["rollback"]
        async with database.transaction() as session:
            await session.execute(
                insert(Item).values(id=1, account_id=1, name="c", created_at=START)
            )
        assert await database.reads.all(select(Item.name), str) == ["c"]
        assert trips == ["INSERT", "INSERT (loop)", "INSERT"]
    finally:
        await database.dispose()


async def test_lock_for_writing_puts_every_statement_after_it_on_the_loop(
    sqlite_database: Database, trips: list[str], ends: list[str]
) -> None:
    database = sqlite_database
    try:
        async with database.transaction() as session:
            await database.lock_for_writing(session)
            assert await session.scalar(select(func.count()).select_from(Item)) == 0
            await session.execute(insert(Item).values(account_id=1, name="a", created_at=START))
        assert trips == ["BEGIN", "SELECT (loop)", "INSERT (loop)"]
        assert ends == ["commit"]
        assert await database.reads.all(select(Item.name), str) == ["a"]
    finally:
        await database.dispose()


async def test_run_writes_on_sqlite_is_one_trip_to_the_thread(
    sqlite_database: Database, trips: list[str]
) -> None:
    """After the write lock, statements run on the loop; the writes given to
    ``run_writes`` go to SQLite's thread together, where SQLite runs without the GIL."""
    database = sqlite_database
    where: list[tuple[str, bool]] = []
    table = Item.__table__.name
    try:
        async with database.transaction() as session:
            await database.lock_for_writing(session)
            connection = await session.connection()
            raw = (await connection.get_raw_connection()).driver_connection
            raw._conn.set_trace_callback(
                lambda sql: where.append(
                    (sql.split()[0], threading.current_thread() is threading.main_thread())
                )
            )
            assert await session.scalar(select(func.count()).select_from(Item)) == 0
            await database.run_writes(
                connection,
                [
                    (
                        f"INSERT INTO {table} (account_id, name, created_at) VALUES (?, ?, ?)",
                        (1, f"item {n}", "2026-01-01 00:00:00.000000"),
                    )
                    for n in range(3)
                ],
            )
            raw._conn.set_trace_callback(None)
        assert trips == ["BEGIN", "SELECT (loop)"]  # the writes never went through a cursor
        assert where == [("SELECT", True), *[("INSERT", False)] * 3]
        assert len(await database.reads.all(select(Item.name), str)) == 3
    finally:
        await database.dispose()


async def test_lock_for_writing_waits_for_another_process_off_the_loop(
    sqlite_database: Database, tmp_path: Any
) -> None:
    """Another process's write lock is waited for in SQLite's busy handler, on the
    thread: the loop keeps running meanwhile. (The other process here is a connection
    of its own, which SQLite cannot tell apart; it lets go once the loop has run while
    the lock was being waited for, so a lock waited for on the loop would wait out the
    busy timeout and fail.)"""
    database = sqlite_database
    other = sqlite3.connect(tmp_path / "data-path.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO test_data_path_items VALUES (7, 1, 'other', '2026-01-01')")
    waiting = asyncio.Event()

    async def let_go_while_waited_for() -> None:
        await waiting.wait()
        for _ in range(3):
            await asyncio.sleep(0)
        other.execute("COMMIT")

    letting_go = asyncio.create_task(let_go_while_waited_for())
    try:
        async with database.transaction() as session:
            waiting.set()
            await database.lock_for_writing(session)
            assert not other.in_transaction
            await session.execute(insert(Item).values(account_id=1, name="a", created_at=START))
        await letting_go
        names = await database.reads.all(select(Item.name).order_by(Item.id), str)
        assert names == ["other", "a"]
    finally:
        other.close()
        await database.dispose()


async def test_an_in_list_is_read_on_the_driver_too(
    sqlite_database: Database, trips: list[str]
) -> None:
    """A list parameter is written out per execution and still runs on ``sqlite3``'s
    own connections, not through the engine (whose statements ``trips`` sees)."""
    database = sqlite_database
    try:
        async with database.transaction() as session:
            await session.execute(
                insert(Item), [{"account_id": 1, "name": n, "created_at": START} for n in "abc"]
            )
        trips.clear()
        listed = select(Item.name).where(Item.id.in_(bindparam("ids", expanding=True)))
        names = await database.reads.all(listed.order_by(Item.id), str, ids=[3, 1, 7])
        assert names == ["a", "c"]
        assert await database.reads.all(listed, str, ids=[]) == []
        assert trips == []
    finally:
        await database.dispose()


async def test_sqlite_statement_errors_are_the_drivers(sqlite_database: Database) -> None:
    database = sqlite_database
    try:
        with pytest.raises(OperationalError, match="no such table") as raised:
            async with database.transaction() as session:
                await session.execute(text("SELECT * FROM no_such_table"))
        assert not unavailable(raised.value)
    finally:
        await database.dispose()


async def test_turns_are_first_come_first_served() -> None:
    turns = sqlite_module.Turns()
    first = await turns.take()
    order: list[int] = []

    async def writer(n: int) -> None:
        lock = await turns.take()
        order.append(n)
        lock.release()

    waiting = [asyncio.create_task(writer(n)) for n in range(5)]
    await asyncio.sleep(0)
    assert order == []
    first.release()
    await asyncio.gather(*waiting)
    assert order == [0, 1, 2, 3, 4]


async def test_a_writer_waits_for_its_turn_no_longer_than_the_busy_timeout(
    sqlite_database: Database, trips: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    database = sqlite_database
    monkeypatch.setattr(sqlite_module, "BUSY_TIMEOUT", 0.05)
    holder_wrote = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with database.transaction() as session:
            await session.execute(insert(Item).values(account_id=1, name="h", created_at=START))
            holder_wrote.set()
            await release.wait()

    holding = asyncio.create_task(holder())
    try:
        await holder_wrote.wait()
        assert trips == ["INSERT"]
        with pytest.raises(OperationalError, match="database is locked") as raised:
            async with database.transaction() as session:
                await session.execute(insert(Item).values(account_id=1, name="w", created_at=START))
        assert unavailable(raised.value)
        # It waited in the process, in line, not in SQLite's busy handler.
        assert trips == ["INSERT"]
        # Reads never wait for a turn.
        assert await database.reads.scalar(select(func.count()).select_from(Item)) == 0
    finally:
        release.set()
        await holding
        await database.dispose()
    assert holding.exception() is None


# PostgreSQL ---------------------------------------------------------------------------


async def _backend_pid(database: Database) -> int:
    async with database.transaction() as session:
        return int(await session.scalar(text("SELECT pg_backend_pid()")) or 0)


async def _terminate(url: str, pid: int) -> None:
    other = Database(url)
    try:
        async with other.transaction() as session:
            await session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        await other.dispose()


async def test_a_page_runs_on_its_prepared_generic_plan(
    database: Database, backend: Backend
) -> None:
    """With the page's numbers in its SQL, PostgreSQL stops planning every execution
    (the planner would otherwise have to plan each one for the unknown ``LIMIT``)."""
    if backend.name != "postgresql":
        pytest.skip("SQLite has no plan cache to speak of")
    reads = database.reads
    for _ in range(8):
        items, total = await reads.page(PAGE, ItemView, account_id=1, offset=10, limit=5)
        assert ([item.id for item in items], total) == ([11, 12, 13, 14, 15], 30)
    # Reads in turn take the same pooled connection, whose prepared statements these are.
    [(generic, custom)] = await reads.all(
        select(text("generic_plans"), text("custom_plans"))
        .select_from(text("pg_prepared_statements"))
        .where(
            # The page's statement, not this one (whose text has these words too).
            text("statement LIKE 'SELECT test_data_path_items.id%'"),
            text("statement LIKE '%LIMIT 5 OFFSET 10%'"),
        ),
        lambda generic, custom: (generic, custom),
    )
    assert custom <= 5 < custom + generic
    assert generic >= 3


async def test_a_postgresql_in_list_is_one_statement_for_every_length(
    database: Database, backend: Backend
) -> None:
    """On PostgreSQL a list is one array parameter (``= ANY``, ``<> ALL``), so asyncpg
    prepares one statement whatever the list's length, elements converted as before."""
    if backend.name != "postgresql":
        pytest.skip("SQLite's lists are written out")
    reads = database.reads
    listed = (
        select(Item.id)
        .where(
            Item.id.in_(bindparam("ids", expanding=True)),
            Item.id.not_in(bindparam("skip", expanding=True)),
        )
        .order_by(Item.id)
    )
    assert await reads.all(listed, int, ids=[1, 2, 3], skip=[2]) == [1, 3]
    assert await reads.all(listed, int, ids=range(1, 31), skip=[]) == list(range(1, 31))
    assert await reads.all(listed, int, ids=[], skip=[1]) == []
    at = select(Item.id).where(Item.created_at.in_(bindparam("at", expanding=True)))
    assert await reads.all(at, int, at=[START + timedelta(minutes=3)]) == [4]
    # Reads in turn take the same pooled connection, whose prepared statements these are.
    prepared = await reads.all(
        select(text("statement"))
        .select_from(text("pg_prepared_statements"))
        .where(text("statement LIKE 'SELECT test_data_path_items.id%'")),
        str,
    )
    assert len(prepared) == 2
    assert all("ANY($" in statement for statement in prepared)


async def test_a_read_connection_goes_back_to_the_pool_without_a_reset(
    database: Database, backend: Backend
) -> None:
    """asyncpg's default release sends ``RESET ALL`` and three more statements, a round
    trip per read; the reads' connections never leave state behind to reset."""
    if backend.name != "postgresql":
        pytest.skip("SQLite connections are files: nothing to reset")
    pid = await database.reads.scalar(select(func.pg_backend_pid()))
    async with database.transaction() as session:
        last = await session.scalar(
            text("SELECT query FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
        )
    assert last is not None
    assert "pg_backend_pid" in last
    assert "RESET" not in last


@pytest.fixture
async def one_connection(backend: Backend) -> AsyncIterator[Database]:
    """A PostgreSQL database whose pool holds a single connection."""
    if backend.name != "postgresql":
        pytest.skip("SQLite connections are files: nothing to ping")
    database = Database(backend.database_url, pool_size=1, max_overflow=0)
    try:
        yield database
    finally:
        await database.dispose()


async def test_an_idle_pooled_connection_is_pinged_and_replaced(
    one_connection: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(database_module, "IDLE_BEFORE_PING", 0.0)
    pid = await _backend_pid(one_connection)
    await _terminate(one_connection.url.render_as_string(hide_password=False), pid)
    # The pooled connection is dead; the ping finds out and a new one answers.
    assert await _backend_pid(one_connection) not in (0, pid)


async def test_a_recently_used_connection_is_not_pinged(
    one_connection: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side of the trade: no round trip for a connection in steady use, so a
    connection killed between two quick requests fails the second one (and the pool
    then replaces it)."""
    monkeypatch.setattr(database_module, "IDLE_BEFORE_PING", 3600.0)
    pid = await _backend_pid(one_connection)
    await _terminate(one_connection.url.render_as_string(hide_password=False), pid)
    with pytest.raises(DBAPIError) as raised:
        await _backend_pid(one_connection)
    assert unavailable(raised.value)
    assert await _backend_pid(one_connection) not in (0, pid)
