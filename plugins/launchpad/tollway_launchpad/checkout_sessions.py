"""Checkout sessions as both sides use them: the API making one, the hosted page
reading and completing it.

A session's id is its URL's last segment and the only credential of its page
(``secrets.token_urlsafe(32)``: 43 characters, 256 bits); only its SHA-256 is stored,
so nobody reading the database can pay on a customer's page, and a path that cannot
be an id is answered without a lookup.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime
from typing import Literal, cast

import msgspec
from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import Reads
from tollway_launchpad.models import CheckoutSession, Customer, Plan

SESSION_ID = re.compile(r"[A-Za-z0-9_-]{43}")
"""What :func:`new_session_id` makes (``fullmatch``)."""

State = Literal["open", "paid", "expired", "withdrawn"]
"""Where a session stands: payable, paid, past ``expires_at``, or no longer payable
because its plan was deactivated or its customer was."""


def new_session_id() -> str:
    return secrets.token_urlsafe(32)


def id_hash(session_id: str) -> str:
    """What the table keeps of a session id."""
    return hashlib.sha256(session_id.encode()).hexdigest()


class OpenSession(msgspec.Struct, frozen=True):
    """A session with what its page shows and charges."""

    id_hash: str
    account_id: int
    customer_id: int
    plan_id: int
    billing_interval: Literal["month", "year"]
    amount_cents: int
    success_url: str
    cancel_url: str
    expires_at: datetime
    completed_at: datetime | None
    plan_name: str
    plan_slug: str
    trial_days: int
    features: list[str]
    plan_active: bool
    customer_active: bool

    def state(self, now: datetime) -> State:
        if self.completed_at is not None:
            return "paid"
        if now >= self.expires_at:
            return "expired"
        if not (self.plan_active and self.customer_active):
            return "withdrawn"
        return "open"


_SESSION = (
    select(
        CheckoutSession.id_hash,
        CheckoutSession.account_id,
        CheckoutSession.customer_id,
        CheckoutSession.plan_id,
        CheckoutSession.billing_interval,
        CheckoutSession.amount_cents,
        CheckoutSession.success_url,
        CheckoutSession.cancel_url,
        CheckoutSession.expires_at,
        CheckoutSession.completed_at,
        Plan.name,
        Plan.slug,
        Plan.trial_days,
        Plan.features,
        Plan.is_active,
        Customer.is_active,
    )
    .join(Plan, Plan.id == CheckoutSession.plan_id)
    .join(Customer, Customer.id == CheckoutSession.customer_id)
    .where(CheckoutSession.id_hash == bindparam("id_hash"))
)

_SESSIONS = cast(Table, CheckoutSession.__table__)
_COMPLETE = (
    update(_SESSIONS)
    .where(
        _SESSIONS.c.id_hash == bindparam("session_hash"),
        _SESSIONS.c.completed_at.is_(None),
    )
    .values(
        completed_at=bindparam("now", type_=_SESSIONS.c.completed_at.type),
        subscription_id=bindparam("subscription", type_=_SESSIONS.c.subscription_id.type),
    )
)


async def find(reads: Reads, session_id: str) -> OpenSession | None:
    """The session of ``session_id`` (any workspace's: the id is the credential), or
    ``None``; a string that cannot be an id is not looked up."""
    if not SESSION_ID.fullmatch(session_id):
        return None
    return await reads.first(_SESSION, OpenSession, id_hash=id_hash(session_id))


async def complete(
    session: AsyncSession, session_hash: str, subscription_id: int, now: datetime
) -> bool:
    """Mark the session paid by ``subscription_id`` in ``session``'s transaction;
    ``False`` when it was already (another request paid it first)."""
    connection = await session.connection()
    result = await connection.execute(
        _COMPLETE, {"session_hash": session_hash, "now": now, "subscription": subscription_id}
    )
    return bool(result.rowcount == 1)
