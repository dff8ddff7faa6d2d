"""Tallies: counts kept by triggers equal ``count(*)`` after every kind of write, on
SQLite and PostgreSQL.

Items of an account are counted by kind, box and owner; the owner may be missing
(``NULL``, counted under 0), a deleted owner sets it to ``NULL`` and a deleted box or
account deletes its items, through foreign keys the triggers must follow. A second
tally counts them by note, whose ``NULL`` stands in as text SQL must quote.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import (
    Column,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    delete,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from tollway import Account, Gateway, Tally
from tollway.testing import GatewayFactory

NOBODY = 0
metadata = MetaData()
boxes = Table(
    "tally_test_boxes",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("account_id", ForeignKey(Account.id, ondelete="CASCADE"), nullable=False),
)
owners = Table(
    "tally_test_owners",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("account_id", ForeignKey(Account.id, ondelete="CASCADE"), nullable=False),
)
items = Table(
    "tally_test_items",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("account_id", ForeignKey(Account.id, ondelete="CASCADE"), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("box_id", ForeignKey(boxes.c.id, ondelete="CASCADE"), nullable=False),
    Column("owner_id", ForeignKey(owners.c.id, ondelete="SET NULL"), nullable=True),
    Column("note", String(20), nullable=True),
    Column("touches", Integer, nullable=False, default=0),
)
counts = Table(
    "tally_test_item_counts",
    metadata,
    Column("account_id", ForeignKey(Account.id, ondelete="CASCADE"), primary_key=True),
    Column("kind", String(20), primary_key=True),
    Column("box_id", Integer, primary_key=True),
    Column("owner_id", Integer, primary_key=True),
    Column("n", Integer, nullable=False),
)
NO_NOTE = "it's: none"
"""A stand-in for ``NULL`` as SQL must quote it, and as a bind parameter would look."""
note_counts = Table(
    "tally_test_note_counts",
    metadata,
    Column("note", String(20), primary_key=True),
    Column("n", Integer, nullable=False),
)
NOTES = Tally(note_counts.name, items.name, ("note",), nulls={"note": NO_NOTE})
TALLY = Tally(
    counts.name,
    items.name,
    ("account_id", "kind", "box_id", "owner_id"),
    nulls={"owner_id": NOBODY},
)
GROUP = (items.c.account_id, items.c.kind, items.c.box_id, func.coalesce(items.c.owner_id, NOBODY))


@dataclass
class Store:
    gateway: Gateway
    accounts: tuple[int, int]
    boxes: tuple[int, int]
    owners: tuple[int, int]
    """Of the first account: two boxes and two owners."""

    async def write(self, statement: Any) -> None:
        async with self.gateway.database.engine.begin() as connection:
            await connection.execute(statement)

    async def add(self, kind: str, box: int, owner: int | None, account: int = 0) -> int:
        async with self.gateway.database.engine.begin() as connection:
            values = {"account_id": self.accounts[account], "kind": kind}
            values |= {"box_id": box, "owner_id": owner}
            added = await connection.execute(insert(items).values(values).returning(items.c.id))
            return int(added.scalar_one())

    async def total(self, **equal: Any) -> int:
        """What the tally says (through the read path, as a list's total is read)."""
        statement = TALLY.total(**{name: bindparam(name) for name in equal})
        return int(await self.gateway.database.reads.scalar(statement, **equal))

    async def tallied(self) -> dict[tuple[Any, ...], int]:
        """Every group's count, groups counted 0 left out."""
        async with self.gateway.database.engine.connect() as connection:
            rows = await connection.execute(select(counts))
            return {tuple(row[:-1]): row[-1] for row in rows if row[-1] != 0}

    async def counted(self) -> dict[tuple[Any, ...], int]:
        """The same, by ``count(*)``."""
        async with self.gateway.database.engine.connect() as connection:
            rows = await connection.execute(select(*GROUP, func.count()).group_by(*GROUP))
            return {tuple(row[:-1]): row[-1] for row in rows}

    async def exact(self) -> dict[tuple[Any, ...], int]:
        """The counts, after checking they are what ``count(*)`` says."""
        tallied = await self.tallied()
        assert tallied == await self.counted()
        return tallied


async def _made(connection: AsyncConnection, table: Table, account: int) -> int:
    made = await connection.execute(insert(table).values(account_id=account).returning(table.c.id))
    return int(made.scalar_one())


async def _set_up(gateway: Gateway, *, install: bool) -> Store:
    first = await gateway.accounts.create_account("acme")
    second = await gateway.accounts.create_account("globex")
    async with gateway.database.engine.begin() as connection:
        await connection.run_sync(metadata.drop_all)
        await connection.run_sync(metadata.create_all)
        if install:
            await connection.run_sync(TALLY.install)
            await connection.run_sync(NOTES.install)
        made = [await _made(connection, table, first) for table in (boxes, boxes, owners, owners)]
    return Store(gateway, (first, second), (made[0], made[1]), (made[2], made[3]))


@pytest.fixture
async def gateway(gateway_factory: GatewayFactory) -> AsyncIterator[Gateway]:
    """A gateway whose database also has the test's tables, dropped afterwards."""
    gateway = await gateway_factory()
    yield gateway
    async with gateway.database.engine.begin() as connection:
        await connection.run_sync(TALLY.uninstall)
        await connection.run_sync(NOTES.uninstall)
        await connection.run_sync(metadata.drop_all)


async def test_inserts_updates_and_deletes_are_counted(gateway: Gateway) -> None:
    store = await _set_up(gateway, install=True)
    (acme, _), (box, other_box), (ada, _) = store.accounts, store.boxes, store.owners
    first = await store.add("bug", box, ada)
    second = await store.add("bug", box, ada)
    third = await store.add("idea", other_box, None)
    assert await store.exact() == {(acme, "bug", box, ada): 2, (acme, "idea", other_box, NOBODY): 1}
    assert await store.total(account_id=acme) == 3
    assert await store.total(account_id=acme, kind="bug") == 2
    assert await store.total(account_id=acme, owner_id=NOBODY) == 1  # asks for the NULLs

    await store.write(update(items).where(items.c.id == first).values(kind="idea"))
    await store.write(update(items).where(items.c.id == third).values(owner_id=ada))
    assert await store.exact() == {
        (acme, "bug", box, ada): 1,
        (acme, "idea", box, ada): 1,
        (acme, "idea", other_box, ada): 1,
    }
    await store.write(update(items).where(items.c.id == third).values(owner_id=None))
    await store.write(delete(items).where(items.c.id == second))
    assert await store.exact() == {
        (acme, "idea", box, ada): 1,
        (acme, "idea", other_box, NOBODY): 1,
    }
    assert await store.total(account_id=acme, kind="bug") == 0
    assert await store.total(account_id=acme, kind="idea", box_id=box, owner_id=ada) == 1


async def test_foreign_key_actions_are_counted(gateway: Gateway) -> None:
    store = await _set_up(gateway, install=True)
    (acme, globex), (box, other_box), (ada, bob) = store.accounts, store.boxes, store.owners
    async with gateway.database.engine.begin() as connection:
        globex_box = await _made(connection, boxes, globex)
    for kind, box_id, owner in [("bug", box, ada), ("bug", box, bob), ("bug", other_box, ada)]:
        await store.add(kind, box_id, owner)
    await store.add("bug", globex_box, None, account=1)

    await store.write(delete(owners).where(owners.c.id == ada))  # SET NULL
    assert await store.exact() == {
        (acme, "bug", box, NOBODY): 1,
        (acme, "bug", box, bob): 1,
        (acme, "bug", other_box, NOBODY): 1,
        (globex, "bug", globex_box, NOBODY): 1,
    }
    await store.write(delete(boxes).where(boxes.c.id == box))  # CASCADE
    assert await store.total(account_id=acme) == 1
    await store.write(delete(Account).where(Account.id == acme))
    assert await store.exact() == {(globex, "bug", globex_box, NOBODY): 1}
    async with gateway.database.engine.connect() as connection:
        left = await connection.scalar(select(func.count()).select_from(counts))
    assert left == 1  # the account's counts rows went with it, zeros included


async def test_writes_leaving_the_groups_alone_touch_no_count(gateway: Gateway) -> None:
    """A message bumping its conversation's activity must cost nothing more: an update
    that sets no grouping column, or sets one to the value it had, fires no trigger."""
    store = await _set_up(gateway, install=True)
    box, ada = store.boxes[0], store.owners[0]
    item = await store.add("bug", box, ada)
    changes = {
        "postgresql": "SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) "
        f"FROM pg_stat_xact_user_tables WHERE relname = '{counts.name}'",
        "sqlite": "SELECT total_changes()",
    }[gateway.database.engine.dialect.name]

    async def writes(*values: dict[str, Any]) -> int:
        """Rows written while updating ``item`` with each of ``values`` in turn."""
        async with gateway.database.engine.begin() as connection:
            before = await connection.scalar(text(changes))
            for each in values:
                await connection.execute(update(items).where(items.c.id == item).values(each))
            return int(await connection.scalar(text(changes))) - int(before)

    # SQLite counts the item's own row too, PostgreSQL only the counts table's.
    own = 1 if gateway.database.is_sqlite else 0
    assert await writes({"touches": 1}, {"kind": "bug", "owner_id": ada}) == 2 * own
    assert await writes({"kind": "idea"}) == own + 2  # one count down, one up
    assert await store.exact() == {(store.accounts[0], "idea", box, ada): 1}


async def test_install_counts_the_rows_already_there(gateway: Gateway) -> None:
    store = await _set_up(gateway, install=False)
    (acme, globex), (box, other_box), (ada, _) = store.accounts, store.boxes, store.owners
    for kind, box_id, owner in [("bug", box, ada), ("bug", box, ada), ("idea", other_box, None)]:
        await store.add(kind, box_id, owner)
    assert await store.tallied() == {}
    async with gateway.database.engine.begin() as connection:
        await connection.run_sync(TALLY.install)
    assert await store.exact() == {(acme, "bug", box, ada): 2, (acme, "idea", other_box, NOBODY): 1}
    await store.add("idea", other_box, None)  # and counting goes on from there
    assert await store.total(account_id=acme, kind="idea") == 2
    assert await store.total(account_id=globex) == 0


async def test_uninstall_stops_counting_and_install_counts_again(gateway: Gateway) -> None:
    store = await _set_up(gateway, install=True)
    acme, box = store.accounts[0], store.boxes[0]
    first = await store.add("bug", box, None)
    async with gateway.database.engine.begin() as connection:
        await connection.run_sync(TALLY.uninstall)
        await connection.run_sync(TALLY.uninstall)  # already gone: no error
    await store.add("bug", box, None)
    await store.write(update(items).where(items.c.id == first).values(kind="idea"))
    assert await store.tallied() == {(acme, "bug", box, NOBODY): 1}  # as it was
    async with gateway.database.engine.begin() as connection:
        await connection.run_sync(TALLY.install)
    assert await store.exact() == {(acme, "bug", box, NOBODY): 1, (acme, "idea", box, NOBODY): 1}


async def test_a_text_stand_in_for_null_is_quoted(gateway: Gateway) -> None:
    store = await _set_up(gateway, install=True)
    first = await store.add("bug", store.boxes[0], None)
    await store.add("bug", store.boxes[0], None)
    await store.write(update(items).where(items.c.id == first).values(note="seen"))
    async with gateway.database.engine.connect() as connection:
        rows = (await connection.execute(select(note_counts).order_by(note_counts.c.note))).all()
    assert [tuple(row) for row in rows] == [(NO_NOTE, 1), ("seen", 1)]
    total = NOTES.total(note=bindparam("note"))
    assert await gateway.database.reads.scalar(total, note=NO_NOTE) == 1


def test_conditions_and_nulls_name_grouping_columns() -> None:
    with pytest.raises(ValueError, match=r"not grouped by \['note'\]"):
        TALLY.total(note="x")
    with pytest.raises(ValueError, match=r"nulls names columns \['note'\]"):
        Tally("counts", "items", ("account_id",), nulls={"note": ""})
