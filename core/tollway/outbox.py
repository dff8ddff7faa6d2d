"""Durable background work kept in database rows: claimed under a lease, polled for.

A product that must do something after a commit, and keep trying until it succeeds
(send a webhook, deliver a chat message), stores the work as a row in its own
transaction, then lets a :class:`Poller` find due rows. :func:`claim_due` takes them
with one conditional ``UPDATE`` that only matches rows whose lease is free, so two
processes never both get the same attempt (:func:`take_leases` is that ``UPDATE``, for
a claim that reads more than ids); a job that may have waited past its lease renews it
with its token first (:func:`renew`), and a process that dies mid-attempt leaves a
lease that lapses, so the attempt is made again: at least once, never lost.

The rows need four columns, named in :class:`LeasedColumns`: whether the row is
pending, when it is next due, and the lease's expiry and token.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import BindParameter, ColumnElement, CursorResult, bindparam, or_, select, update
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from tollway.db import Database, utcnow

log = logging.getLogger("tollway.outbox")

_AFTER_COMMIT = "tollway.after_commit"
"""The key in ``Session.info`` of the callbacks its transaction's commit runs."""


def after_commit(session: AsyncSession, callback: Callable[[], None]) -> None:
    """Call ``callback`` once ``session``'s transaction has committed; forget it if the
    transaction rolls back. A callback registered twice runs once. (One listener on
    every session does this: registering listeners per session costs more than the
    statements of a short transaction.)"""
    callbacks: dict[Callable[[], None], None] = session.info.setdefault(_AFTER_COMMIT, {})
    callbacks[callback] = None


@sqlalchemy_event.listens_for(Session, "after_commit")
def _committed(session: Session) -> None:
    for callback in session.info.pop(_AFTER_COMMIT, {}):
        try:
            callback()
        except Exception:
            log.exception("an after-commit callback failed")


@sqlalchemy_event.listens_for(Session, "after_rollback")
def _rolled_back(session: Session) -> None:
    session.info.pop(_AFTER_COMMIT, None)


def rowcount(result: Any) -> int:
    return cast(CursorResult[Any], result).rowcount


@dataclass(frozen=True, slots=True, eq=False)
class LeasedColumns:
    """The columns of a table of leased work (mapped attributes of ``model``). Compared
    and hashed by identity: its fields are SQL expressions."""

    model: Any
    id: Any
    pending: ColumnElement[bool]
    """True for rows that still have an attempt to come."""
    due_at: Any
    lease_until: Any
    lease_token: Any

    def due(self, now: datetime | BindParameter[datetime]) -> ColumnElement[bool]:
        condition: ColumnElement[bool] = (
            self.pending
            & (self.due_at <= now)
            & or_(self.lease_until.is_(None), self.lease_until < now)
        )
        return condition

    def held(self, row_id: Any, token: str, now: datetime) -> ColumnElement[bool]:
        """The row is still leased to ``token``."""
        condition: ColumnElement[bool] = (
            (self.id == row_id)
            & (self.lease_token == token)
            & (self.lease_until >= now)
            & self.pending
        )
        return condition

    def released(self) -> dict[str, Any]:
        """Values that give the lease up (merge them into the attempt's outcome)."""
        return {self.lease_until.key: None, self.lease_token.key: None}


@functools.cache
def _claim_statements(columns: LeasedColumns) -> tuple[Any, Any]:
    """:func:`claim_due`'s two statements for one table, built once: the due rows'
    ids, and the conditional ``UPDATE`` leasing those still due."""
    now: BindParameter[datetime] = bindparam("now")
    due = columns.due(now)
    candidates = (
        select(columns.id).where(due).order_by(columns.due_at, columns.id).limit(bindparam("limit"))
    )
    lease = (
        update(columns.model)
        .where(columns.id.in_(bindparam("ids", expanding=True)), due)
        .values(
            {
                columns.lease_until.key: bindparam("new_lease_until"),
                columns.lease_token.key: bindparam("new_lease_token"),
            }
        )
        .returning(columns.id)
    )
    return candidates, lease


async def claim_due(
    database: Database, columns: LeasedColumns, *, lease: timedelta, limit: int
) -> tuple[str, list[Any]]:
    """Lease up to ``limit`` due rows, oldest due first: ``(token, ids)``."""
    candidates_due, lease_due = _claim_statements(columns)
    now = utcnow()
    token = secrets.token_hex(16)
    async with database.transaction() as session:
        connection = await session.connection()
        candidates = (
            (await connection.execute(candidates_due, {"now": now, "limit": limit})).scalars().all()
        )
        if not candidates:
            return token, []
        # The due condition is evaluated again, row by row under the row lock, so a
        # row another process claimed since the candidates were read is left out.
        leased = await connection.execute(
            lease_due,
            {
                "ids": list(candidates),
                "now": now,
                "new_lease_until": now + lease,
                "new_lease_token": token,
            },
        )
        return token, list(leased.scalars())


async def take_leases(
    session: AsyncSession,
    columns: LeasedColumns,
    candidates: Sequence[Any],
    token: str,
    *,
    now: datetime,
    lease: timedelta,
    returning: Sequence[Any] = (),
) -> list[tuple[Any, ...]]:
    """Lease those of the ``candidates`` (ids of rows found due at ``now``) that are
    still due: one row per leased id, the id then the ``returning`` columns' values
    (columns of the leased table, read as the lease is taken)."""
    if not candidates:
        return []
    # The due condition is evaluated again, row by row under the row lock, so a row
    # another process claimed since the candidates were read is left out.
    result = await session.execute(
        update(columns.model)
        .where(columns.id.in_(candidates), columns.due(now))
        .values({columns.lease_until.key: now + lease, columns.lease_token.key: token})
        .returning(columns.id, *returning)
        .execution_options(synchronize_session=False)
    )
    return [tuple(row) for row in result]


async def renew(
    session: AsyncSession, columns: LeasedColumns, row_id: Any, token: str, lease: timedelta
) -> bool:
    """Extend the lease on ``row_id`` if ``token`` still holds it (a job that waited in
    a queue past its lease must not act on a row another process took over)."""
    now = utcnow()
    result = await session.execute(
        update(columns.model)
        .where(columns.held(row_id, token, now))
        .values({columns.lease_until.key: now + lease})
        .execution_options(synchronize_session=False)
    )
    return rowcount(result) == 1


class Poller:
    """Runs ``work`` (one pass that returns how many rows it took) when woken and every
    ``interval`` seconds regardless; a pass that took a whole ``batch`` is followed by
    another at once, so a backlog drains at full speed rather than one batch per poll.
    """

    def __init__(
        self, name: str, work: Callable[[], Awaitable[int]], *, interval: float, batch: int
    ) -> None:
        self.name = name
        self._work = work
        self.interval = interval
        self.batch = batch
        self._wakeup = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def wake(self) -> None:
        """Make a pass now rather than at the next poll."""
        self._wakeup.set()

    def wake_after_commit(self, session: AsyncSession) -> None:
        """Make a pass as soon as ``session``'s transaction commits, when the rows it
        added are due and visible; nothing if it rolls back. (The rows are due in the
        database either way: this only saves waiting for the poll.)"""
        after_commit(session, self.wake)

    @property
    def running(self) -> bool:
        return self._task is not None

    async def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._wakeup.clear()
            self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self, grace: float = 10.0) -> None:
        """Stop between passes: a pass under way finishes its transaction first (one
        cancelled mid-statement could leave SQLite's write lock behind), unless it
        takes longer than ``grace`` seconds."""
        if self._task is None:
            return
        self._stopping = True
        self._wakeup.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), grace)
        except TimeoutError:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._task = None

    async def _run(self) -> None:
        while not self._stopping:
            try:
                taken = await self._work()
            except Exception:
                log.exception("%s: pass failed; trying again at the next poll", self.name)
                taken = 0
            if self._stopping:
                return
            if taken >= self.batch:
                await asyncio.sleep(0)
                continue
            try:
                async with asyncio.timeout(self.interval):
                    await self._wakeup.wait()
            except TimeoutError:
                pass
            self._wakeup.clear()
