"""Tables of the subscription billing product; every row carries the workspace (the
gateway's account) it belongs to.

Subscriptions, invoices and payment methods are not here: they are the billing
engine's (:mod:`tollway.billing`), on the ledger ``launchpad``, with the customer's id
as the engine's customer reference.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from tollway import Account, UTCDateTime, make_metadata, utcnow


class LaunchpadBase(DeclarativeBase):
    metadata = make_metadata()


class Plan(LaunchpadBase):
    """A plan a workspace sells (spec 2.3)."""

    __tablename__ = "launchpad_plans"
    __table_args__ = (
        UniqueConstraint("account_id", "slug"),
        Index("ix_launchpad_plans_account_order", "account_id", "sort_order", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    slug: Mapped[str] = mapped_column(String(100))
    price_monthly_cents: Mapped[int] = mapped_column(Integer)
    price_annual_cents: Mapped[int] = mapped_column(Integer)
    trial_days: Mapped[int] = mapped_column(Integer, default=0)
    features: Mapped[list[str]] = mapped_column(JSON, default=list)
    quota: Mapped[dict[str, int]] = mapped_column(JSON, default=dict)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    sort_order: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Customer(LaunchpadBase):
    """A workspace's end customer (spec 2.3); the email is unique within the workspace,
    compared ignoring case (``email_key``)."""

    __tablename__ = "launchpad_customers"
    __table_args__ = (UniqueConstraint("account_id", "email_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))
    """As the customer wrote it."""
    email_key: Mapped[str] = mapped_column(String(320))
    """Lowercased: what uniqueness and sign-in compare."""
    password_hash: Mapped[str] = mapped_column(String(200))
    """argon2id (tollway.hash_password)."""
    full_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class CheckoutSession(LaunchpadBase):
    """A hosted checkout page's session: one customer buying one plan at one interval.

    The URL's session id is the credential; only its SHA-256 is stored (like an API
    key's), so a database reader cannot pay on a customer's page."""

    __tablename__ = "launchpad_checkout_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"))
    customer_id: Mapped[int] = mapped_column(
        ForeignKey(Customer.id, ondelete="CASCADE"), index=True
    )
    plan_id: Mapped[int] = mapped_column(ForeignKey(Plan.id, ondelete="CASCADE"), index=True)
    billing_interval: Mapped[str] = mapped_column(String(8))
    """``month`` or ``year``."""
    amount_cents: Mapped[int] = mapped_column(Integer)
    """The price shown when the session was made: what the page charges."""
    success_url: Mapped[str] = mapped_column(Text)
    cancel_url: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    subscription_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """The engine's subscription the payment started."""
