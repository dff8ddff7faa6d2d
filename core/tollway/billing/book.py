"""One account's billing on one ledger inside one transaction: the moves a request
makes (subscribe, cancel, change) and the steps the engine takes when they fall due
(renewal invoices, recording a charge's outcome, ending a subscription)."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

import msgspec
from sqlalchemy import Table, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.exc import StaleDataError

from tollway.billing.invoices import mark_paid, open_invoice
from tollway.billing.methods import default_method, default_token, keep_card
from tollway.billing.models import (
    BillingInvoice,
    BillingInvoiceSequence,
    BillingPaymentMethod,
    BillingSubscription,
)
from tollway.billing.periods import period_end
from tollway.billing.processor import CardDetails, CardError, Charge, SavedCard
from tollway.billing.records import (
    INVOICE_PAID,
    LIVE,
    SUBSCRIPTION_CANCELED,
    SUBSCRIPTION_CREATED,
    SUBSCRIPTION_UPDATED,
    ConcurrentChange,
    IllegalTransition,
    Invoice,
    Ledger,
    Subscription,
    Terms,
    check_terms,
    days_between,
    invoice_data,
    invoice_record,
    iso,
    prorate,
    subscription_data,
    subscription_record,
)
from tollway.billing.refunds import forget_on_rollback, refund_on_rollback
from tollway.db.base import utcnow

if TYPE_CHECKING:
    from tollway.billing.engine import BillingEngine

log = logging.getLogger("tollway.billing")
SEQUENCES = cast(Table, BillingInvoiceSequence.__table__)


async def charged_token(session: AsyncSession, row: BillingSubscription) -> str | None:
    """The card a subscription's charges go to: its customer's default card (which the
    customer may change), else the card it started with."""
    token = await default_token(session, row.ledger, row.account_id, row.customer)
    if token is None and row.payment_method_id is not None:
        method = await session.get(BillingPaymentMethod, row.payment_method_id)
        token = method.token if method is not None else None
    return token


class Book:
    """One account's billing on one ledger, inside one transaction.

    Methods that charge (:meth:`subscribe`, :meth:`change`) call the processor before
    they write: call them before the transaction has written anything (on SQLite a
    transaction holding the write lock would wait for the processor's own write, and
    the processor for it), and write your own rows after.
    """

    def __init__(
        self, engine: BillingEngine, session: AsyncSession, ledger: Ledger, account_id: int
    ) -> None:
        self.engine = engine
        self.session = session
        self.ledger = ledger
        self.account_id = account_id

    # Reads ---------------------------------------------------------------------------

    async def _live_row(self, customer: str, line: str) -> BillingSubscription | None:
        query = select(BillingSubscription).where(
            BillingSubscription.ledger == self.ledger.name,
            BillingSubscription.account_id == self.account_id,
            BillingSubscription.customer == customer,
            BillingSubscription.line == line,
            BillingSubscription.status.in_(LIVE),
        )
        return (await self.session.scalars(query)).first()

    async def subscription(self, customer: str, line: str = "") -> Subscription | None:
        """The customer's live subscription (trialing, active or past due), if any."""
        row = await self._live_row(customer, line)
        return subscription_record(row) if row is not None else None

    async def subscriptions(
        self, customers: Sequence[str], line: str = ""
    ) -> dict[str, Subscription]:
        """The live subscriptions of ``customers``, by customer."""
        if not customers:
            return {}
        query = select(BillingSubscription).where(
            BillingSubscription.ledger == self.ledger.name,
            BillingSubscription.account_id == self.account_id,
            BillingSubscription.customer.in_(list(customers)),
            BillingSubscription.line == line,
            BillingSubscription.status.in_(LIVE),
        )
        rows = (await self.session.scalars(query)).all()
        return {row.customer: subscription_record(row) for row in rows}

    async def invoices(
        self, customer: str, *, offset: int = 0, limit: int = 20
    ) -> tuple[list[Invoice], int]:
        """The customer's invoices, newest first, and how many there are."""
        owned = (
            BillingInvoice.ledger == self.ledger.name,
            BillingInvoice.account_id == self.account_id,
            BillingInvoice.customer == customer,
        )
        query = (
            select(BillingInvoice)
            .where(*owned)
            .order_by(BillingInvoice.id.desc())
            .offset(offset)
            .limit(limit)
        )
        rows = (await self.session.scalars(query)).all()
        total = await self.session.scalar(select(func.count()).where(*owned))
        return [invoice_record(row) for row in rows], int(total or 0)

    async def _unpaid_invoice(self, subscription_id: int) -> BillingInvoice | None:
        query = select(BillingInvoice).where(
            BillingInvoice.subscription_id == subscription_id, BillingInvoice.status == "open"
        )
        return (await self.session.scalars(query)).first()

    # Moves a request makes -------------------------------------------------------------

    async def subscribe(
        self,
        customer: str,
        terms: Terms,
        *,
        card: CardDetails | None = None,
        line: str = "",
        now: datetime | None = None,
    ) -> Subscription:
        """Start ``customer``'s subscription: a trial when ``terms.trial_days``
        (nothing charged), else the first period charged now, to ``card`` (saved as
        the customer's card) or, without one, to the customer's default saved card. A
        free plan needs no card. A refused card raises :class:`CardError` and writes
        nothing. Emits ``subscription.created`` (and ``invoice.paid`` when charged)."""
        now = now or utcnow()
        check_terms(terms)
        if await self._live_row(customer, line) is not None:
            raise IllegalTransition("The customer already has a live subscription")
        processor = self.engine.processor
        saved = await processor.save_card(card) if card is not None else None
        charge: Charge | None = None
        if terms.trial_days <= 0 and terms.amount_cents > 0:
            token = saved.token if saved is not None else await self._default_token(customer)
            charge = await processor.charge(
                token,
                amount_cents=terms.amount_cents,
                currency=self.ledger.currency,
                idempotency_key="start:" + secrets.token_urlsafe(18),
                description=f"{terms.plan_name} ({terms.interval})",
            )
            if not charge.succeeded:
                if saved is not None:
                    await processor.forget_card(saved.token)
                raise CardError(
                    charge.failure_message or "Your card was declined.",
                    charge.failure_code or "card_declined",
                )
            refund_on_rollback(self.session, processor, charge)
        try:
            return await self._start(customer, terms, saved, charge, line, now)
        except BaseException:
            if charge is not None:
                await processor.refund(charge.id)
            raise

    async def _default_token(self, customer: str) -> str:
        token = await default_token(self.session, self.ledger.name, self.account_id, customer)
        if token is None:
            raise CardError("No card is saved to pay for this plan.", "no_payment_method")
        return token

    async def _start(
        self,
        customer: str,
        terms: Terms,
        saved: SavedCard | None,
        charge: Charge | None,
        line: str,
        now: datetime,
    ) -> Subscription:
        if saved is not None:
            method: BillingPaymentMethod | None = await keep_card(
                self.session, self.ledger.name, self.account_id, customer, saved
            )
            await self._flush()
            forget_on_rollback(self.session, self.engine.processor, saved.token)
        else:
            method = await default_method(self.session, self.ledger.name, self.account_id, customer)
        trial_end = now + timedelta(days=terms.trial_days) if terms.trial_days > 0 else None
        anchor = trial_end or now
        row = BillingSubscription(
            ledger=self.ledger.name,
            account_id=self.account_id,
            customer=customer,
            line=line,
            plan=terms.plan,
            plan_name=terms.plan_name,
            interval=terms.interval,
            amount_cents=terms.amount_cents,
            currency=self.ledger.currency,
            status="trialing" if trial_end else "active",
            payment_method_id=method.id if method is not None else None,
            anchor_at=anchor,
            cycle=0 if trial_end is None else -1,
            trial_end_at=trial_end,
            current_period_start=now,
            current_period_end=trial_end or period_end(anchor, terms.interval, 0),
            cancel_at_period_end=False,
            created_at=now,
            updated_at=now,
        )
        row.next_action_at = row.current_period_end
        self.session.add(row)
        await self._flush()
        await self._emit(SUBSCRIPTION_CREATED, subscription_data(row))
        if charge is not None:
            invoice = await open_invoice(
                self.session,
                row,
                "start",
                row.current_period_start,
                row.current_period_end,
                now,
                numbering=self.ledger.numbering,
            )
            mark_paid(invoice, charge, now)
            await self._flush()
            await self._emit(INVOICE_PAID, invoice_data(row, invoice))
        return subscription_record(row)

    async def cancel(
        self,
        customer: str,
        *,
        immediately: bool,
        line: str = "",
        now: datetime | None = None,
    ) -> Subscription:
        """Cancel now (the open invoice voided) or at the period's end."""
        now = now or utcnow()
        row = await self._live_row(customer, line)
        if row is None:
            raise IllegalTransition("The customer has no live subscription to cancel")
        if immediately:
            await self._end(row, now, void_open=True)
        elif not row.cancel_at_period_end:
            row.cancel_at_period_end = True
            self._touch(row, now)
            await self._flush()
            await self._emit(SUBSCRIPTION_UPDATED, subscription_data(row))
        return subscription_record(row)

    async def change(
        self, customer: str, terms: Terms, *, line: str = "", now: datetime | None = None
    ) -> Subscription:
        """Change the plan or interval: an upgrade (same interval, a higher price) now,
        the rest of the period's difference charged (day-based, whole cents); anything
        else at the period's end. A trial switches plan at once, charging nothing."""
        now = now or utcnow()
        check_terms(terms)
        row = await self._live_row(customer, line)
        if row is None:
            raise IllegalTransition("The customer has no live subscription to change")
        if row.status in ("past_due", "unpaid"):
            raise IllegalTransition(
                f"The subscription is {row.status.replace('_', ' ')}: its open invoice must be "
                "paid before a plan change"
            )
        same = terms.plan == row.plan and terms.interval == row.interval
        if same and terms.amount_cents == row.amount_cents:
            if row.pending is not None:  # back to the current terms: drop the scheduled change
                row.pending = None
                self._touch(row, now)
                await self._flush()
                await self._emit(SUBSCRIPTION_UPDATED, subscription_data(row))
            return subscription_record(row)
        immediate = row.status == "trialing" or (
            terms.interval == row.interval and terms.amount_cents >= row.amount_cents
        )
        if not immediate:
            row.pending = msgspec.to_builtins(terms)
            self._touch(row, now)
            await self._flush()
            await self._emit(SUBSCRIPTION_UPDATED, subscription_data(row))
            return subscription_record(row)
        charge: Charge | None = None
        amount = 0
        if row.status == "active":
            period_days = days_between(row.current_period_start, row.current_period_end)
            remaining = days_between(now, row.current_period_end)
            amount = prorate(terms.amount_cents - row.amount_cents, remaining, period_days)
        if amount > 0:
            token = await charged_token(self.session, row)
            if token is None:
                raise CardError("No card is saved for this subscription.", "no_payment_method")
            charge = await self.engine.processor.charge(
                token,
                amount_cents=amount,
                currency=row.currency,
                idempotency_key="change:" + secrets.token_urlsafe(18),
                description=f"{row.plan_name} to {terms.plan_name}, prorated",
            )
            if not charge.succeeded:
                raise CardError(
                    charge.failure_message or "Your card was declined.",
                    charge.failure_code or "card_declined",
                )
            refund_on_rollback(self.session, self.engine.processor, charge)
        try:
            period = (row.current_period_start, row.current_period_end)
            self._set_terms(row, terms)
            row.pending = None
            self._touch(row, now)
            await self._flush()
            await self._emit(SUBSCRIPTION_UPDATED, subscription_data(row))
            if charge is not None:
                invoice = await open_invoice(
                    self.session,
                    row,
                    "proration",
                    now,
                    period[1],
                    now,
                    numbering=self.ledger.numbering,
                )
                invoice.amount_cents = amount
                invoice.lines = [
                    {
                        "description": invoice.description,
                        "amount_cents": amount,
                        "period_start": iso(now),
                        "period_end": iso(period[1]),
                    }
                ]
                mark_paid(invoice, charge, now)
                await self._flush()
                await self._emit(INVOICE_PAID, invoice_data(row, invoice))
        except BaseException:
            if charge is not None:
                await self.engine.processor.refund(charge.id)
            raise
        return subscription_record(row)

    # Steps the engine takes ---------------------------------------------------------------

    async def _end(self, row: BillingSubscription, when: datetime, *, void_open: bool) -> None:
        if void_open:
            await self.session.execute(
                update(BillingInvoice)
                .where(BillingInvoice.subscription_id == row.id, BillingInvoice.status == "open")
                .values(status="void", voided_at=when, next_attempt_at=None)
            )
        row.status = "canceled"
        row.canceled_at = when
        row.next_action_at = None
        self._touch(row, when)
        await self._flush()
        await self._emit(SUBSCRIPTION_CANCELED, subscription_data(row))

    # Helpers --------------------------------------------------------------------------------

    @staticmethod
    def _set_terms(row: BillingSubscription, terms: Terms) -> None:
        row.plan = terms.plan
        row.plan_name = terms.plan_name
        row.interval = terms.interval
        row.amount_cents = terms.amount_cents

    @staticmethod
    def _touch(row: BillingSubscription, when: datetime) -> None:
        row.updated_at = when  # (the mapper bumps ``version`` with every update)

    async def _flush(self) -> None:
        """Flush, a write another transaction won first answering 409."""
        try:
            await self.session.flush()
        except (StaleDataError, IntegrityError):
            raise ConcurrentChange() from None

    async def _emit(self, event: str, data: Mapping[str, Any]) -> None:
        if self.ledger.events:
            name = self.ledger.event_prefix + event
            await self.engine.gateway.webhooks.emit(self.session, self.account_id, name, data)
