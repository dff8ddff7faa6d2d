"""Payment methods: saved cards as the engine keeps them (the processor's token,
brand, last four digits, expiry), exactly one default per customer."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.billing.models import BillingPaymentMethod
from tollway.billing.processor import SavedCard
from tollway.db.base import utcnow


async def keep_card(
    session: AsyncSession, ledger: str, account_id: int, customer: str, saved: SavedCard
) -> BillingPaymentMethod:
    """Keep a saved card as the customer's default payment method (the previous
    default is one no longer: a unique index allows one)."""
    await session.execute(
        update(BillingPaymentMethod)
        .where(
            BillingPaymentMethod.ledger == ledger,
            BillingPaymentMethod.account_id == account_id,
            BillingPaymentMethod.customer == customer,
            BillingPaymentMethod.is_default.is_(True),
        )
        .values(is_default=False)
    )
    method = BillingPaymentMethod(
        ledger=ledger,
        account_id=account_id,
        customer=customer,
        token=saved.token,
        brand=saved.brand,
        last4=saved.last4,
        exp_month=saved.exp_month,
        exp_year=saved.exp_year,
        is_default=True,
        created_at=utcnow(),
    )
    session.add(method)
    return method


async def saved_methods(
    session: AsyncSession, ledger: str, account_id: int, customer: str
) -> Sequence[BillingPaymentMethod]:
    query = (
        select(BillingPaymentMethod)
        .where(
            BillingPaymentMethod.ledger == ledger,
            BillingPaymentMethod.account_id == account_id,
            BillingPaymentMethod.customer == customer,
        )
        .order_by(BillingPaymentMethod.id)
    )
    return (await session.scalars(query)).all()
