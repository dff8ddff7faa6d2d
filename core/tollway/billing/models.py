"""The billing engine's tables, in the core's migration branch.

Every row belongs to an account (the gateway's tenant) on a *ledger*, the product
that bills: ``launchpad`` (a workspace billing its customers; ``customer`` is the
workspace's customer id) or ``account`` (the platform billing the tenant itself;
``customer`` is empty). ``line`` tells apart a subscriber's several subscriptions on
one ledger (the account product's one per product); launchpad has one line, ``""``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from tollway.db.base import UTCDateTime, utcnow
from tollway.db.models import Account, CoreBase

_LIVE = text("status != 'canceled'")
_DEFAULT = text("is_default")


class BillingPaymentMethod(CoreBase):
    """A saved card: the processor's token and what may be shown, never the number."""

    __tablename__ = "billing_payment_methods"
    __table_args__ = (
        Index("ix_billing_payment_methods_owner", "ledger", "account_id", "customer"),
        Index(
            "uq_billing_payment_methods_default",
            "ledger",
            "account_id",
            "customer",
            unique=True,
            sqlite_where=_DEFAULT,
            postgresql_where=_DEFAULT,
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    ledger: Mapped[str] = mapped_column(String(32))
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"))
    customer: Mapped[str] = mapped_column(String(64))
    token: Mapped[str] = mapped_column(String(200))
    brand: Mapped[str] = mapped_column(String(16))
    last4: Mapped[str] = mapped_column(String(4))
    exp_month: Mapped[int] = mapped_column(Integer)
    exp_year: Mapped[int] = mapped_column(Integer)
    is_default: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class BillingSubscription(CoreBase):
    """A subscription and where it stands in its billing cycle.

    Periods are counted from ``anchor_at``: period ``k`` runs from ``anchor_at + k``
    intervals to ``anchor_at + k + 1`` intervals, calendar-correct (a Jan 31 anchor
    renews Feb 28/29, then Mar 31). ``next_action_at`` is when the engine must look
    at the subscription again (the period's end, a retry), ``None`` once canceled.
    ``version`` makes every change conditional: two writers never both move it.
    """

    __tablename__ = "billing_subscriptions"
    __table_args__ = (
        Index(
            "uq_billing_subscriptions_live",
            "ledger",
            "account_id",
            "customer",
            "line",
            unique=True,
            sqlite_where=_LIVE,
            postgresql_where=_LIVE,
        ),
        Index("ix_billing_subscriptions_next_action_at", "next_action_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    ledger: Mapped[str] = mapped_column(String(32))
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"))
    customer: Mapped[str] = mapped_column(String(64))
    line: Mapped[str] = mapped_column(String(64), default="")
    plan: Mapped[str] = mapped_column(String(64))
    plan_name: Mapped[str] = mapped_column(String(200))
    interval: Mapped[str] = mapped_column(String(8))
    amount_cents: Mapped[int] = mapped_column(Integer)
    currency: Mapped[str] = mapped_column(String(3))
    status: Mapped[str] = mapped_column(String(16))
    payment_method_id: Mapped[int | None] = mapped_column(
        ForeignKey(BillingPaymentMethod.id, ondelete="SET NULL"), nullable=True
    )
    anchor_at: Mapped[datetime] = mapped_column(UTCDateTime)
    cycle: Mapped[int] = mapped_column(Integer, default=0)
    trial_end_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    current_period_start: Mapped[datetime] = mapped_column(UTCDateTime)
    current_period_end: Mapped[datetime] = mapped_column(UTCDateTime)
    cancel_at_period_end: Mapped[bool] = mapped_column(Boolean, default=False)
    canceled_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    pending: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """A change applied at the period's end (:class:`tollway.billing.Terms` as JSON)."""
    next_action_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __mapper_args__ = {"version_id_col": version}
    """Every ORM update is conditional on the version read: of two transactions moving
    the same subscription, the second fails (``StaleDataError``) instead of undoing
    the first."""


class BillingInvoice(CoreBase):
    """One charge's invoice: ``draft`` -> ``open`` (numbered) -> ``paid``, or
    ``uncollectible`` after the last failed try, or ``void`` when its subscription is
    canceled first. One per subscription, kind and period start: a renewal is invoiced
    once however many workers run."""

    __tablename__ = "billing_invoices"
    __table_args__ = (
        UniqueConstraint("subscription_id", "kind", "period_start"),
        Index("ix_billing_invoices_owner", "ledger", "account_id", "customer", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True)
    """The public id (``in_...``), also the charge's idempotency key's stem."""
    ledger: Mapped[str] = mapped_column(String(32))
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"))
    customer: Mapped[str] = mapped_column(String(64))
    subscription_id: Mapped[int] = mapped_column(
        ForeignKey(BillingSubscription.id, ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(16))
    """``start`` (the first period), ``cycle`` (a renewal), ``proration`` (an upgrade)."""
    status: Mapped[str] = mapped_column(String(16))
    number: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """Gapless per sequence (the ledger's, per account or per deployment), given when
    the invoice is finalised (opened)."""
    amount_cents: Mapped[int] = mapped_column(Integer)
    currency: Mapped[str] = mapped_column(String(3))
    description: Mapped[str] = mapped_column(String(500))
    lines: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    period_start: Mapped[datetime] = mapped_column(UTCDateTime)
    period_end: Mapped[datetime] = mapped_column(UTCDateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    charge_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    failure_code: Mapped[str | None] = mapped_column(String(64), nullable=True)
    failure_message: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finalized_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    paid_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    voided_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    uncollectible_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class BillingInvoiceSequence(CoreBase):
    """The last invoice number given per sequence; updating it in the finalising
    transaction makes numbers gapless (a rolled-back invoice takes its number back)."""

    __tablename__ = "billing_invoice_sequences"

    ledger: Mapped[str] = mapped_column(String(32), primary_key=True)
    account_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    """``0`` for a ledger numbering across the deployment."""
    last: Mapped[int] = mapped_column(Integer, default=0)
