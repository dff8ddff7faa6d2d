"""Invoices: opened (finalised and numbered) with the subscription's current terms,
numbered gaplessly per sequence, marked paid."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import cast

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.billing.models import BillingInvoice, BillingInvoiceSequence, BillingSubscription
from tollway.billing.processor import Charge
from tollway.billing.records import iso

SEQUENCES = cast(Table, BillingInvoiceSequence.__table__)
PER_DEPLOYMENT = 0
"""The sequence's account for a ledger numbering across the deployment."""


async def open_invoice(
    session: AsyncSession,
    row: BillingSubscription,
    kind: str,
    start: datetime,
    end: datetime,
    when: datetime,
    *,
    numbering: str = "account",
) -> BillingInvoice:
    """A finalised (open, numbered) invoice of ``row``'s current terms for ``start`` to
    ``end``, made at ``when``."""
    description = f"{row.plan_name} ({row.interval}ly)"
    sequence = row.account_id if numbering == "account" else PER_DEPLOYMENT
    invoice = BillingInvoice(
        uid="in_" + secrets.token_hex(12),
        ledger=row.ledger,
        account_id=row.account_id,
        customer=row.customer,
        subscription_id=row.id,
        kind=kind,
        status="open",
        number=await next_number(session, row.ledger, sequence),
        amount_cents=row.amount_cents,
        currency=row.currency,
        description=description,
        lines=[
            {
                "description": description,
                "amount_cents": row.amount_cents,
                "period_start": iso(start),
                "period_end": iso(end),
            }
        ],
        period_start=start,
        period_end=end,
        attempts=0,
        created_at=when,
        finalized_at=when,
    )
    session.add(invoice)
    await session.flush()
    return invoice


async def next_number(session: AsyncSession, ledger: str, account_id: int) -> int:
    """The sequence's next number, taken in this transaction (rolled back with it: the
    row stays locked until then, so numbers are gapless and in commit order)."""
    is_sqlite = session.get_bind().dialect.name == "sqlite"
    insert = sqlite.insert if is_sqlite else postgresql.insert
    statement = (
        insert(SEQUENCES)
        .values(ledger=ledger, account_id=account_id, last=1)
        .on_conflict_do_update(
            index_elements=[SEQUENCES.c.ledger, SEQUENCES.c.account_id],
            set_={"last": SEQUENCES.c.last + 1},
        )
        .returning(SEQUENCES.c.last)
    )
    return int((await session.execute(statement)).scalar_one())


def mark_paid(invoice: BillingInvoice, charge: Charge, when: datetime) -> None:
    invoice.status = "paid"
    invoice.paid_at = when
    invoice.charge_id = charge.id
    invoice.next_attempt_at = None
    invoice.attempts = max(invoice.attempts, 1)
