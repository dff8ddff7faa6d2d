"""The billing engine: subscriptions, their invoices and charges, renewal and dunning.

Built once for every product that sells. A product registers its :class:`Ledger`
(``gateway.billing.add_ledger``) and works on one account's billing inside its
request's transaction through a :class:`Book` (``gateway.billing.book(session,
ledger, account_id)``). Time-driven work (renewals, retries, cancellations at a
period's end, trials ending) is :meth:`BillingEngine.run_due`, run by a job on the
job-queue hook and by ``tollway billing run --as-of``.

Subscription states (docs/billing.md has the table):

========== =========================== ==========================================
from       move                        to
========== =========================== ==========================================
(none)     subscribe, trial_days > 0   trialing (card saved, nothing charged)
(none)     subscribe, first charge ok  active
trialing   trial ends, charge ok       active
trialing,  period ends, charge fails   past_due (retries on ``retry_days``)
active
past_due   a retry's charge ok         active
past_due   the last retry fails        canceled (invoice uncollectible)
any live   cancel immediately          canceled (open invoice void)
any live   cancel at period end        same, ``cancel_at_period_end``; canceled
                                       when the period ends
canceled   anything                    409
========== =========================== ==========================================

Money never moves twice. Charges go to the payment processor with an idempotency key
made of the invoice's id and the attempt's number, so two workers (or a retry after a
crash) asking for the same attempt are charged once; recording an attempt's outcome
is conditional on the attempt not being recorded yet, and a renewal's invoice is unique
per subscription and period. The processor is called while this engine holds no write
in progress: SQLite has one writer, and the processor (an outside service) writes in
its own transactions.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, TypeVar, cast

from sqlalchemy import Table, select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.exc import StaleDataError

from tollway.billing.book import Book, charged_token
from tollway.billing.models import BillingInvoice, BillingSubscription
from tollway.billing.platform import platform_ledger
from tollway.billing.processor import Charge, PaymentProcessor
from tollway.billing.records import Attempt, ConcurrentChange, Ledger, RunReport, iso
from tollway.billing.steps import Steps
from tollway.billing.wallet import Wallet
from tollway.db.base import utcnow
from tollway.outbox import Poller

if TYPE_CHECKING:
    from tollway.gateway import Gateway

log = logging.getLogger("tollway.billing")

RUN_JOB = "billing.run_due"
"""The job running :meth:`BillingEngine.run_due` (registered by the core)."""
CLOCK_INTERVAL = 60.0
"""Seconds between two runs of what is due: a renewal is charged within a minute of
its period's end."""

SUBSCRIPTIONS = cast(Table, BillingSubscription.__table__)
LOCKED_RETRIES = 5
T = TypeVar("T")


def _locked(error: OperationalError) -> bool:
    return "database is locked" in str(error.orig)


def _add(report: RunReport, taken: RunReport) -> None:
    report.renewed += taken.renewed
    report.failed += taken.failed
    report.canceled += taken.canceled
    report.changed += taken.changed
    report.unpaid += taken.unpaid


class BillingEngine:
    """The gateway's one billing engine (``gateway.billing``)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.ledgers: dict[str, Ledger] = {}
        self.add_ledger(platform_ledger(gateway.settings))
        self._clock = Poller("billing clock", self._enqueue_run, interval=CLOCK_INTERVAL, batch=1)

    async def start(self) -> None:
        """Enqueue :data:`RUN_JOB` now and every :data:`CLOCK_INTERVAL` seconds while
        the gateway runs (the platform bills its tenants on every deployment)."""
        await self._clock.start()

    async def stop(self) -> None:
        await self._clock.stop()

    async def _enqueue_run(self) -> int:
        await self.gateway.jobs.enqueue(RUN_JOB, as_of=iso(utcnow()))
        return 0

    @property
    def processor(self) -> PaymentProcessor:
        return self.gateway.payments

    def add_ledger(self, ledger: Ledger) -> None:
        if ledger.name in self.ledgers:
            raise ValueError(f"billing ledger {ledger.name!r} is registered twice")
        if any(days < 1 for days in ledger.retry_days):
            raise ValueError("retry_days must be whole days >= 1")
        self.ledgers[ledger.name] = ledger

    def ledger(self, name: str) -> Ledger:
        try:
            return self.ledgers[name]
        except KeyError:
            raise LookupError(f"no product registered the billing ledger {name!r}") from None

    def wallet(self, session: AsyncSession, ledger: str, account_id: int) -> Wallet:
        """One account's customers' saved cards on ``ledger``, in ``session``'s
        transaction."""
        return Wallet(self, session, self.ledger(ledger), account_id)

    def book(self, session: AsyncSession, ledger: str, account_id: int) -> Book:
        """One account's billing on ``ledger``, in ``session``'s transaction."""
        return Book(self, session, self.ledger(ledger), account_id)

    async def collect(
        self, ledger: str, account_id: int, customer: str, *, now: datetime | None = None
    ) -> RunReport:
        """Try the customer's unpaid invoices (past due or unpaid subscriptions) now,
        with the default card: what a new card, or a new default, is for. A paid
        invoice makes its subscription active again; a failure counts as a try."""
        now = now or utcnow()
        query = (
            select(BillingInvoice.subscription_id, BillingInvoice.id, BillingInvoice.attempts)
            .join(BillingSubscription, BillingSubscription.id == BillingInvoice.subscription_id)
            .where(
                BillingInvoice.ledger == self.ledger(ledger).name,
                BillingInvoice.account_id == account_id,
                BillingInvoice.customer == customer,
                BillingInvoice.status == "open",
                BillingSubscription.status.in_(("past_due", "unpaid")),
            )
            .order_by(BillingInvoice.id)
        )
        async with self.gateway.database.sessions() as session:
            unpaid = (await session.execute(query)).all()
        report = RunReport()
        for subscription_id, invoice_id, attempts in unpaid:
            attempt = Attempt(subscription_id, invoice_id, attempts + 1)
            await self._locked_retry(partial(self._attempt, attempt, report, now))
        self._moved(report)
        return report

    def _moved(self, report: RunReport) -> None:
        """After subscriptions moved: this process's keys are admitted by the new
        standing at once (other processes' within the key cache's TTL)."""
        if report != RunReport():
            self.gateway.authenticator.forget()

    # Time-driven work ---------------------------------------------------------------

    async def run_due(self, as_of: datetime | None = None, *, batch: int = 100) -> RunReport:
        """Do everything due up to ``as_of`` (default now): renewals, retries, trials
        ending, cancellations at a period's end, scheduled changes. Every step happens
        at its own due time (a renewal at the period's end, a retry on its day), so a
        run far ahead replays the months in order, like a test clock. Safe to run in
        several processes at once."""
        as_of = as_of or utcnow()
        report = RunReport()
        database = self.gateway.database
        while True:
            query = (
                select(SUBSCRIPTIONS.c.id)
                .where(
                    SUBSCRIPTIONS.c.next_action_at <= as_of,
                    SUBSCRIPTIONS.c.ledger.in_(list(self.ledgers)),
                )
                .order_by(SUBSCRIPTIONS.c.next_action_at, SUBSCRIPTIONS.c.id)
                .limit(batch)
            )
            async with database.sessions() as session:
                due = list((await session.scalars(query)).all())
            if not due:
                self._moved(report)
                return report
            progressed = False
            for subscription_id in due:
                progressed |= await self._advance(subscription_id, as_of, report)
            if not progressed:
                self._moved(report)
                return report  # what is left is being moved by another worker

    async def _advance(self, subscription_id: int, as_of: datetime, report: RunReport) -> bool:
        """Move one subscription through every step due by ``as_of``; whether it moved."""
        moved = False
        while True:
            taken = RunReport()  # counted once the step has committed
            step = await self._locked_retry(partial(self._next_step, subscription_id, as_of, taken))
            if step is None:
                return moved
            _add(report, taken)
            moved = True
            if isinstance(step, Attempt):
                await self._locked_retry(partial(self._attempt, step, report))

    async def _locked_retry(self, step: Callable[[], Awaitable[T]]) -> T:
        """``step()``, again when SQLite says another process held its write lock past
        the busy timeout (a step is one transaction, or a charge made with the same
        idempotency key: doing it again is safe). Processes writing in turn are not
        served fairly by SQLite's busy handler; one process never meets this."""
        for tries in range(LOCKED_RETRIES, 0, -1):
            try:
                return await step()
            except OperationalError as error:
                if tries == 1 or not _locked(error):
                    raise
                log.warning("billing: the database was locked by another process; trying again")
        raise AssertionError("unreachable")

    async def _next_step(
        self, subscription_id: int, as_of: datetime, report: RunReport
    ) -> Attempt | bool | None:
        """In one transaction: the subscription's next due step. A charge to make is
        returned as an :class:`Attempt` (made after this transaction commits); other
        steps are done here (``True``). ``None`` when nothing is due. A step another
        writer took first rolls back and is looked at again."""
        try:
            async with self.gateway.database.transaction() as session:
                row = await session.get(BillingSubscription, subscription_id)
                if row is None or row.next_action_at is None or row.next_action_at > as_of:
                    return None
                book = Steps(self, session, self.ledgers[row.ledger], row.account_id)
                open_invoice = await book._unpaid_invoice(row.id)
                if open_invoice is not None and row.status == "unpaid":
                    await book._give_up(row, open_invoice)
                    report.canceled += 1
                    return True
                if open_invoice is not None:
                    return Attempt(row.id, open_invoice.id, open_invoice.attempts + 1)
                if row.cancel_at_period_end:
                    await book._end(row, row.current_period_end, void_open=False)
                    report.canceled += 1
                    return True
                if row.pending is not None:
                    book._apply_pending(row)
                    report.changed += 1
                invoice = await book._renew(row)
                if invoice is None:
                    return True  # a free period rolls over: nothing to report
                return Attempt(row.id, invoice.id, 1)
        except (StaleDataError, IntegrityError, ConcurrentChange):
            return True

    async def _attempt(
        self, attempt: Attempt, report: RunReport, when: datetime | None = None
    ) -> None:
        """Charge one attempt of an open invoice and record its outcome once. A charge
        nobody can record (the subscription was canceled meanwhile) is refunded."""
        database = self.gateway.database
        async with database.sessions() as session:
            invoice = await session.get(BillingInvoice, attempt.invoice_id)
            row = await session.get(BillingSubscription, attempt.subscription_id)
            if invoice is None or row is None or invoice.attempts >= attempt.number:
                return
            token = await charged_token(session, row)
        charge = await self._charge(invoice, token, attempt.number)
        for _ in range(3):
            try:
                async with database.transaction() as session:
                    book = Steps(self, session, self.ledgers[row.ledger], row.account_id)
                    recorded = await book._record(attempt, charge, when)
                break
            except (StaleDataError, ConcurrentChange):
                continue  # a request moved the subscription meanwhile: record on it anew
        else:
            recorded = None
        if recorded is None:
            await self._settle_unrecorded(attempt, charge)
        elif recorded == "paid":
            report.renewed += 1
        else:
            report.failed += 1
            report.canceled += recorded == "canceled"
            report.unpaid += recorded == "unpaid"

    async def _settle_unrecorded(self, attempt: Attempt, charge: Charge) -> None:
        """Give back a succeeded charge that no invoice holds: the invoice was voided,
        or its attempt was recorded with another charge."""
        if not charge.succeeded:
            return
        async with self.gateway.database.sessions() as session:
            invoice = await session.get(BillingInvoice, attempt.invoice_id)
        if invoice is None or invoice.charge_id != charge.id:
            log.warning("refunding charge %s: its invoice no longer takes it", charge.id)
            await self.processor.refund(charge.id)

    async def _charge(self, invoice: BillingInvoice, token: str | None, number: int) -> Charge:
        if token is None:
            return Charge(
                id="",
                status="failed",
                amount_cents=invoice.amount_cents,
                currency=invoice.currency,
                failure_code="no_payment_method",
                failure_message="No card is saved for this subscription.",
            )
        return await self.processor.charge(
            token,
            amount_cents=invoice.amount_cents,
            currency=invoice.currency,
            idempotency_key=f"{invoice.uid}:{number}",
            description=invoice.description,
        )
