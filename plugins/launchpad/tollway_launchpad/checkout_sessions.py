"""Checkout sessions as both sides use them: the API making one, the hosted page
reading and completing it.

A session's id is the credential of its page; only its hash is stored
(:mod:`tollway.billing.hosted`'s sessions).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, cast

import msgspec
from sqlalchemy import Table, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import Reads
from tollway.billing.hosted import SESSION_ID, complete_session, id_hash
from tollway_launchpad.models import CheckoutSession, Customer, Plan

State = Literal["open", "paid", "expired", "withdrawn"]
"""Where a session stands: payable, paid, past ``expires_at``, or no longer payable
because its plan was deactivated or its customer was."""


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
    return await complete_session(
        session, _SESSIONS, session_hash, now, subscription_id=subscription_id
    )
