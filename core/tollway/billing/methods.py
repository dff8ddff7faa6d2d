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
    session: AsyncSession,
    ledger: str,
    account_id: int,
    customer: str,
    saved: SavedCard,
    *,
    default: bool = True,
) -> BillingPaymentMethod:
    """Keep a saved card as one of the customer's payment methods, by default the
    default one (the previous default is one no longer: a unique index allows one)."""
    if default:
        await clear_default(session, ledger, account_id, customer)
    method = BillingPaymentMethod(
        ledger=ledger,
        account_id=account_id,
        customer=customer,
        token=saved.token,
        brand=saved.brand,
        last4=saved.last4,
        exp_month=saved.exp_month,
        exp_year=saved.exp_year,
        is_default=default,
        created_at=utcnow(),
    )
    session.add(method)
    return method


async def clear_default(session: AsyncSession, ledger: str, account_id: int, customer: str) -> None:
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


async def default_method(
    session: AsyncSession, ledger: str, account_id: int, customer: str
) -> BillingPaymentMethod | None:
    """The customer's default card, if one is saved."""
    query = select(BillingPaymentMethod).where(
        BillingPaymentMethod.ledger == ledger,
        BillingPaymentMethod.account_id == account_id,
        BillingPaymentMethod.customer == customer,
        BillingPaymentMethod.is_default.is_(True),
    )
    return (await session.scalars(query)).first()


async def default_token(
    session: AsyncSession, ledger: str, account_id: int, customer: str
) -> str | None:
    """The processor token of the customer's default card: what renewals charge."""
    method = await default_method(session, ledger, account_id, customer)
    return method.token if method is not None else None
