"""A customer's saved cards on one ledger, inside one transaction: add one, choose the
default, remove one. Renewals and retries charge the default card, so a customer whose
payment failed adds a card, makes it the default, and the next try uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.billing.methods import clear_default, keep_card, saved_methods
from tollway.billing.models import BillingPaymentMethod, BillingSubscription
from tollway.billing.processor import CardDetails
from tollway.billing.records import LIVE, Ledger, PaymentMethod, method_record
from tollway.billing.refunds import forget_after_commit, forget_on_rollback
from tollway.errors import Conflict, NotFound

if TYPE_CHECKING:
    from tollway.billing.engine import BillingEngine

LAST_CARD = (
    "The last card of a customer with a paid subscription cannot be removed; add another first"
)


class Wallet:
    """One account's customers' cards on ``ledger`` in ``session``'s transaction."""

    def __init__(
        self, engine: BillingEngine, session: AsyncSession, ledger: Ledger, account_id: int
    ) -> None:
        self.engine = engine
        self.session = session
        self.ledger = ledger
        self.account_id = account_id

    async def cards(self, customer: str) -> list[PaymentMethod]:
        rows = await saved_methods(self.session, self.ledger.name, self.account_id, customer)
        return [method_record(row) for row in rows]

    async def add(
        self, customer: str, card: CardDetails, *, default: bool = False
    ) -> PaymentMethod:
        """Save ``card`` (the processor validates it: :class:`CardError`, 422) as one of
        the customer's cards; the default when ``default`` or when it is the first.
        Call it before the transaction writes anything (the processor writes first)."""
        saved = await self.engine.processor.save_card(card)
        first = not await self.cards(customer)
        try:
            method = await keep_card(
                self.session,
                self.ledger.name,
                self.account_id,
                customer,
                saved,
                default=default or first,
            )
            await self.session.flush()
        except BaseException:
            await self.engine.processor.forget_card(saved.token)
            raise
        forget_on_rollback(self.session, self.engine.processor, saved.token)
        return method_record(method)

    async def set_default(self, customer: str, method_id: int) -> PaymentMethod:
        """Make a card the default (the others are not)."""
        method = await self._card(customer, method_id)
        if not method.is_default:
            await clear_default(self.session, self.ledger.name, self.account_id, customer)
            method.is_default = True
            await self.session.flush()
        return method_record(method)

    async def remove(self, customer: str, method_id: int) -> None:
        """Remove a card; the processor forgets it once this transaction commits. The
        last card of a customer with a live paid subscription is kept (409); removing
        the default makes the newest remaining card the default."""
        method = await self._card(customer, method_id)
        others = [row for row in await self._rows(customer) if row.id != method.id]
        if not others and await self._pays(customer):
            raise Conflict(LAST_CARD)
        token = method.token
        await self.session.delete(method)
        await self.session.flush()
        if method.is_default and others:
            newest = max(others, key=lambda row: row.id)
            newest.is_default = True
            await self.session.flush()
        forget_after_commit(self.session, self.engine.processor, token)

    async def _card(self, customer: str, method_id: int) -> BillingPaymentMethod:
        method = await self.session.get(BillingPaymentMethod, method_id)
        if (
            method is None
            or method.ledger != self.ledger.name
            or method.account_id != self.account_id
            or method.customer != customer
        ):
            raise NotFound("Payment method not found")
        return method

    async def _rows(self, customer: str) -> list[BillingPaymentMethod]:
        return list(await saved_methods(self.session, self.ledger.name, self.account_id, customer))

    async def _pays(self, customer: str) -> bool:
        """Whether the customer has a live subscription that costs money."""
        query = select(
            exists().where(
                BillingSubscription.ledger == self.ledger.name,
                BillingSubscription.account_id == self.account_id,
                BillingSubscription.customer == customer,
                BillingSubscription.status.in_(LIVE),
                BillingSubscription.amount_cents > 0,
            )
        )
        return bool(await self.session.scalar(query))
