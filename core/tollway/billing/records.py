"""The billing engine's records: what products pass in (:class:`Ledger`,
:class:`Terms`) and get back (:class:`Subscription`, :class:`Invoice`,
:class:`PaymentMethod`), its errors, and the event bodies it emits."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction
from typing import Any, Literal, cast

import msgspec

from tollway.billing.models import BillingInvoice, BillingPaymentMethod, BillingSubscription
from tollway.billing.periods import Interval
from tollway.errors import Conflict

Status = Literal["trialing", "active", "past_due", "unpaid", "canceled"]
LIVE: tuple[Status, ...] = ("trialing", "active", "past_due", "unpaid")
"""Subscriptions that are not over: one of them at most per customer and line."""

SUBSCRIPTION_CREATED = "subscription.created"
SUBSCRIPTION_UPDATED = "subscription.updated"
SUBSCRIPTION_CANCELED = "subscription.canceled"
SUBSCRIPTION_RENEWED = "subscription.renewed"
INVOICE_PAID = "invoice.paid"
INVOICE_FAILED = "invoice.failed"


class Ledger(msgspec.Struct, frozen=True):
    """A product that bills, and how."""

    name: str
    currency: str = "usd"
    retry_days: tuple[int, ...] = (1, 3, 5)
    """Days from one failed try of a renewal to the next; canceled when the last fails."""
    events: bool = True
    """Emit the billing events to the account's webhook endpoints (launchpad's
    workspace hears about its customers); the product registers the event names."""
    event_prefix: str = ""
    """Put before every event name (``subscription.created``): two ledgers emitting
    events need names of their own."""
    numbering: Literal["account", "deployment"] = "account"
    """Invoice numbers run per account (a workspace's own series) or across the
    deployment (the platform's series)."""
    exhausted: Literal["cancel", "unpaid"] = "cancel"
    """What the last failed retry does: ``cancel`` the subscription (its invoice
    uncollectible), or leave it ``unpaid`` (service stopped, its invoice open) until
    the invoice is paid (:meth:`BillingEngine.collect`) or the period ends, which
    cancels it."""


class Terms(msgspec.Struct, frozen=True):
    """What a subscription buys, in the ledger's words."""

    plan: str
    """The ledger's own reference to the plan (launchpad: the plan's id)."""
    plan_name: str
    """What events show as ``plan``."""
    interval: Interval
    amount_cents: int
    trial_days: int = 0


class PaymentMethod(msgspec.Struct, frozen=True):
    id: int
    brand: str
    last4: str
    exp_month: int
    exp_year: int
    is_default: bool
    created_at: datetime


class Subscription(msgspec.Struct, frozen=True):
    id: int
    customer: str
    line: str
    plan: str
    plan_name: str
    interval: Interval
    amount_cents: int
    currency: str
    status: Status
    trial_end_at: datetime | None
    current_period_start: datetime
    current_period_end: datetime
    cancel_at_period_end: bool
    canceled_at: datetime | None
    pending: Terms | None
    payment_method_id: int | None
    created_at: datetime
    updated_at: datetime


class Invoice(msgspec.Struct, frozen=True):
    id: str
    number: int | None
    subscription_id: int
    kind: str
    status: str
    amount_cents: int
    currency: str
    description: str
    lines: list[dict[str, Any]]
    period_start: datetime
    period_end: datetime
    attempts: int
    failure_message: str | None
    created_at: datetime
    finalized_at: datetime | None
    paid_at: datetime | None
    failed_at: datetime | None
    voided_at: datetime | None
    uncollectible_at: datetime | None


class RunReport(msgspec.Struct):
    """What one :meth:`BillingEngine.run_due` did: renewals paid, tries failed,
    subscriptions ended, scheduled changes applied, subscriptions left unpaid (a free
    period rolling over is none of these)."""

    renewed: int = 0
    failed: int = 0
    canceled: int = 0
    changed: int = 0
    unpaid: int = 0
    """Subscriptions whose last retry failed on a ledger that leaves them unpaid."""


class IllegalTransition(Conflict):
    """A move the subscription's state does not allow (409)."""


class ConcurrentChange(IllegalTransition):
    """Another transaction moved the subscription first (409: try again)."""

    def __init__(self) -> None:
        super().__init__("The subscription was changed at the same time; try again")


class Attempt(msgspec.Struct, frozen=True):
    subscription_id: int
    invoice_id: int
    number: int
    """1 for an invoice's first try."""


def subscription_record(row: BillingSubscription) -> Subscription:
    pending = msgspec.convert(row.pending, Terms) if row.pending else None
    return Subscription(
        id=row.id,
        customer=row.customer,
        line=row.line,
        plan=row.plan,
        plan_name=row.plan_name,
        interval=cast(Interval, row.interval),
        amount_cents=row.amount_cents,
        currency=row.currency,
        status=cast(Status, row.status),
        trial_end_at=row.trial_end_at,
        current_period_start=row.current_period_start,
        current_period_end=row.current_period_end,
        cancel_at_period_end=row.cancel_at_period_end,
        canceled_at=row.canceled_at,
        pending=pending,
        payment_method_id=row.payment_method_id,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def invoice_record(row: BillingInvoice) -> Invoice:
    return Invoice(
        id=row.uid,
        number=row.number,
        subscription_id=row.subscription_id,
        kind=row.kind,
        status=row.status,
        amount_cents=row.amount_cents,
        currency=row.currency,
        description=row.description,
        lines=list(row.lines),
        period_start=row.period_start,
        period_end=row.period_end,
        attempts=row.attempts,
        failure_message=row.failure_message,
        created_at=row.created_at,
        finalized_at=row.finalized_at,
        paid_at=row.paid_at,
        failed_at=row.failed_at,
        voided_at=row.voided_at,
        uncollectible_at=row.uncollectible_at,
    )


def method_record(row: BillingPaymentMethod) -> PaymentMethod:
    return PaymentMethod(
        row.id, row.brand, row.last4, row.exp_month, row.exp_year, row.is_default, row.created_at
    )


def _customer_id(customer: str) -> int | str:
    return int(customer) if customer.isdigit() else customer


def subscription_data(row: BillingSubscription) -> dict[str, Any]:
    """A subscription event's ``data`` (the spec's subscription_id, plan, status, and
    what a receiver needs to act without calling back)."""
    return {
        "subscription_id": row.id,
        "customer_id": _customer_id(row.customer),
        "plan": row.plan_name,
        "status": row.status,
        "billing_interval": row.interval,
        "amount_cents": row.amount_cents,
        "current_period_end": row.current_period_end.isoformat().replace("+00:00", "Z"),
        "cancel_at_period_end": row.cancel_at_period_end,
    }


def invoice_data(row: BillingSubscription, invoice: BillingInvoice) -> dict[str, Any]:
    return {
        **subscription_data(row),
        "invoice_id": invoice.uid,
        "amount_cents": invoice.amount_cents,
        "currency": invoice.currency,
        "attempt": invoice.attempts,
    }


def prorate(difference_cents: int, remaining_days: int, period_days: int) -> int:
    """``difference_cents`` for ``remaining_days`` of a ``period_days`` period, in whole
    cents, half to even."""
    if period_days <= 0:
        return 0
    return round(Fraction(difference_cents * remaining_days, period_days))


def days_between(start: datetime, end: datetime) -> int:
    """Whole days from ``start`` to ``end``, a started day counting as one."""
    seconds = (end - start).total_seconds()
    return max(0, -int(-seconds // 86_400))


def check_terms(terms: Terms) -> None:
    if terms.amount_cents < 0 or terms.trial_days < 0:
        raise ValueError("a plan's price and trial days cannot be negative")


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
