"""The steps the billing engine takes when they fall due, on one subscription inside
one transaction: a scheduled change taking over, the next period (and its invoice),
recording a charge's outcome, giving an unpaid subscription up."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import cast

import msgspec
from sqlalchemy import update

from tollway.billing.book import Book
from tollway.billing.invoices import mark_paid, open_invoice
from tollway.billing.models import BillingInvoice, BillingSubscription
from tollway.billing.periods import Interval, period_end
from tollway.billing.processor import Charge
from tollway.billing.records import (
    INVOICE_FAILED,
    INVOICE_PAID,
    SUBSCRIPTION_RENEWED,
    SUBSCRIPTION_UPDATED,
    Attempt,
    Terms,
    invoice_data,
    subscription_data,
)


class Steps(Book):
    """A :class:`Book` with the moves only the engine makes."""

    def _apply_pending(self, row: BillingSubscription) -> None:
        """A scheduled change takes over at the period's end; a new interval starts a
        new anchor there."""
        terms = msgspec.convert(row.pending, Terms)
        if terms.interval != row.interval:
            row.anchor_at = row.current_period_end
            row.cycle = -1
        self._set_terms(row, terms)
        row.pending = None

    async def _renew(self, row: BillingSubscription) -> BillingInvoice | None:
        """Move the subscription into its next period and open that period's invoice,
        first try due at once (another worker's doing the same fails at the flush).
        A free period opens no invoice: the subscription simply goes on."""
        when = row.current_period_end
        was = row.status
        row.cycle += 1
        row.current_period_start = when
        row.current_period_end = period_end(row.anchor_at, cast(Interval, row.interval), row.cycle)
        row.next_action_at = when  # until the invoice is paid or given up on
        self._touch(row, when)
        if row.amount_cents == 0:
            row.status = "active"
            row.next_action_at = row.current_period_end
            await self._flush()
            event = SUBSCRIPTION_UPDATED if was == "trialing" else SUBSCRIPTION_RENEWED
            await self._emit(event, subscription_data(row))
            return None
        await self.session.flush()
        invoice = await open_invoice(
            self.session,
            row,
            "cycle",
            row.current_period_start,
            row.current_period_end,
            when,
            numbering=self.ledger.numbering,
        )
        invoice.next_attempt_at = when
        await self.session.flush()
        return invoice

    async def _give_up(self, row: BillingSubscription, invoice: BillingInvoice) -> None:
        """An unpaid subscription's period is over: its invoice is uncollectible and
        the subscription ends."""
        when = row.current_period_end
        invoice.status = "uncollectible"
        invoice.uncollectible_at = when
        invoice.next_attempt_at = None
        await self.session.flush()
        await self._end(row, when, void_open=False)

    async def _record(
        self, attempt: Attempt, charge: Charge, when: datetime | None = None
    ) -> str | None:
        """Record an attempt's outcome unless another worker did; what happened. A
        scheduled try happened at its due time, one asked for (``when``) then."""
        invoice = await self.session.get(BillingInvoice, attempt.invoice_id)
        row = await self.session.get(BillingSubscription, attempt.subscription_id)
        if invoice is None or row is None:
            return None
        when = when or invoice.next_attempt_at or invoice.period_start
        claimed = await self.session.execute(
            update(BillingInvoice)
            .where(
                BillingInvoice.id == invoice.id,
                BillingInvoice.status == "open",
                BillingInvoice.attempts == attempt.number - 1,
            )
            .values(attempts=attempt.number)
        )
        if claimed.rowcount != 1:  # type: ignore[attr-defined]
            return None
        await self.session.refresh(invoice)
        was = row.status
        if charge.succeeded:
            mark_paid(invoice, charge, when)
            row.status = "active"
            row.next_action_at = row.current_period_end
            self._touch(row, when)
            await self.session.flush()
            await self._emit(INVOICE_PAID, invoice_data(row, invoice))
            event = SUBSCRIPTION_UPDATED if was == "trialing" else SUBSCRIPTION_RENEWED
            await self._emit(event, subscription_data(row))
            return "paid"
        invoice.failed_at = when
        invoice.charge_id = charge.id or None
        invoice.failure_code = charge.failure_code
        invoice.failure_message = charge.failure_message
        retries = self.ledger.retry_days
        if attempt.number <= len(retries):
            retry_at = when + timedelta(days=retries[attempt.number - 1])
            invoice.next_attempt_at = retry_at
            row.status = "past_due"
            row.next_action_at = retry_at
            self._touch(row, when)
            await self.session.flush()
            await self._emit(INVOICE_FAILED, invoice_data(row, invoice))
            if was != "past_due":
                await self._emit(SUBSCRIPTION_UPDATED, subscription_data(row))
            return "failed"
        invoice.next_attempt_at = None
        if self.ledger.exhausted == "unpaid":
            row.status = "unpaid"
            row.next_action_at = row.current_period_end  # paid by then, or over
            self._touch(row, when)
            await self.session.flush()
            await self._emit(INVOICE_FAILED, invoice_data(row, invoice))
            if was != "unpaid":
                await self._emit(SUBSCRIPTION_UPDATED, subscription_data(row))
            return "unpaid"
        invoice.status = "uncollectible"
        invoice.uncollectible_at = when
        await self.session.flush()
        await self._emit(INVOICE_FAILED, invoice_data(row, invoice))
        await self._end(row, when, void_open=False)
        return "canceled"
