"""The subscription billing product's plans: one workspace's plans inside one
transaction.

A plan's slug is unique within its workspace (409). Subscriptions keep the terms they
were sold at: changing a plan's prices changes what new subscriptions and changes
cost, not what existing ones are charged; its features and quota are read from the
plan, so they apply to its subscribers at once.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec
from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import BadRequest, Conflict, utcnow
from tollway_launchpad import schemas
from tollway_launchpad.models import Plan
from tollway_launchpad.queries import ACCOUNT, PLAN_COLUMNS, plan_not_found

PLANS = cast(Table, Plan.__table__)
INSERT = insert(PLANS).returning(*PLAN_COLUMNS)
CURRENT = select(*PLAN_COLUMNS).where(
    PLANS.c.id == bindparam("plan_id"), PLANS.c.account_id == ACCOUNT
)


def _text(value: str, field: str) -> str:
    """Text as stored: without surrounding whitespace, and not blank."""
    stripped = value.strip()
    if not stripped:
        raise BadRequest(f"Invalid request body: {field} must not be blank")
    return stripped


def _stored(field: str, value: Any) -> Any:
    """A given field's value as it is stored."""
    if field == "name":
        return _text(value, "name")
    if field == "features":
        # A feature named twice is kept once, in the order first given.
        return list(dict.fromkeys(_text(feature, "features[]") for feature in value))
    return value


class Plans:
    """One workspace's plans in ``session``'s transaction."""

    def __init__(self, session: AsyncSession, account_id: int) -> None:
        self.session = session
        self.account_id = account_id

    async def _run(self, statement: Any, /, **params: Any) -> list[Any]:
        """A Core statement on the transaction's connection, its rows. (An ``UPDATE``
        carries its values inline: an execution parameter named like a column is a
        value it sets.)"""
        connection = await self.session.connection()
        return list(await connection.execute(statement, params))

    async def _write(self, statement: Any, slug: str | None, /, **params: Any) -> list[Any]:
        """``statement`` writing a plan whose slug is ``slug`` (``None``: unchanged)."""
        try:
            return await self._run(statement, **params)
        except IntegrityError:
            # The one unique constraint a plan's write can break; the request rolls back.
            raise Conflict(f"A plan with slug {slug!r} already exists") from None

    async def create(self, data: schemas.PlanCreate) -> schemas.Plan:
        values = {name: _stored(name, getattr(data, name)) for name in data.__struct_fields__}
        now = utcnow()
        [row] = await self._write(
            INSERT,
            data.slug,
            **values,
            account_id=self.account_id,
            created_at=now,
            updated_at=now,
        )
        return schemas.Plan(*row)

    async def update(self, plan_id: int, data: schemas.PlanUpdate) -> schemas.Plan:
        """Only the fields given change (``updated_at`` moves when one does)."""
        changes = {
            name: _stored(name, value)
            for name in data.__struct_fields__
            if (value := getattr(data, name)) is not msgspec.UNSET
        }
        if not changes:
            return await self.plan(plan_id)
        statement = (
            update(PLANS)
            .where(PLANS.c.id == plan_id, PLANS.c.account_id == self.account_id)
            .values(**changes, updated_at=utcnow())
            .returning(*PLAN_COLUMNS)
        )
        rows = await self._write(statement, changes.get("slug"))
        if not rows:
            raise plan_not_found(plan_id)
        return schemas.Plan(*rows[0])

    async def plan(self, plan_id: int) -> schemas.Plan:
        rows = await self._run(CURRENT, plan_id=plan_id, account_id=self.account_id)
        if not rows:
            raise plan_not_found(plan_id)
        return schemas.Plan(*rows[0])
