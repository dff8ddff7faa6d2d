"""The account API's wire types (spec 2.6).

Money is given twice: ``price``/``amount`` as a JSON number in major units (the spec's
decimal: ``29.0``, ``1500`` for yen) and ``price_cents``/``amount_cents`` as the exact
integer in minor units, which is what to compute with.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

import msgspec

InvoiceStatus = Literal["open", "failed", "paid", "void", "uncollectible"]
"""``failed``: open, and its last charge was refused (the next try is scheduled, or
the subscription is unpaid)."""


class Profile(msgspec.Struct, kw_only=True):
    """``GET /v1/account/me``."""

    id: int
    email: str | None
    full_name: str
    company: str
    tax_id: str | None
    products: list[str]
    """The products the account's keys may use (its subscriptions in good standing)."""
    plan: str
    """The richest of those subscriptions' plans (by the plans' rank), ``none`` when
    there is none."""
    created_at: datetime
    updated_at: datetime


class ProfileChange(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``PATCH /v1/account/me``: only the fields given change. ``company`` and
    ``tax_id`` can be cleared with ``null`` (or ``""``); ``full_name`` can be ``""``
    but not ``null``. The email is the account's identity and is not changed here."""

    full_name: str | msgspec.UnsetType = msgspec.UNSET
    company: str | msgspec.UnsetType | None = msgspec.UNSET
    tax_id: str | msgspec.UnsetType | None = msgspec.UNSET


class ProfileUpdated(msgspec.Struct, kw_only=True):
    id: int
    email: str | None
    full_name: str
    company: str
    tax_id: str | None
    updated_at: datetime


class ProductSubscription(msgspec.Struct, kw_only=True):
    id: int
    product: str
    plan_name: str
    status: Literal["trialing", "active", "past_due", "unpaid"]
    """``past_due``: a renewal charge failed and is being retried (the product still
    works); ``unpaid``: every retry failed, the product is refused until the invoice
    is paid (a new default card pays it at once) or the period ends."""
    price: float
    price_cents: int
    currency: str
    interval: Literal["month", "year"]
    current_period_start: datetime
    current_period_end: datetime
    cancel_at_period_end: bool
    scheduled_plan: str | None
    """A cheaper plan taking over at ``current_period_end``."""
    created_at: datetime


class SubscriptionList(msgspec.Struct):
    subscriptions: list[ProductSubscription]


class Invoice(msgspec.Struct, kw_only=True):
    id: str
    number: str
    """Gapless across the deployment, given when the invoice is finalised."""
    product: str
    description: str
    status: InvoiceStatus
    amount: float
    amount_cents: int
    currency: str
    period_start: date
    period_end: date
    attempts: int
    failure_message: str | None
    pdf_url: str
    """A link to the invoice's PDF, signed for this account, valid until
    ``pdf_url_expires_at`` (no API key needed)."""
    pdf_url_expires_at: datetime
    created_at: datetime
    finalized_at: datetime | None
    paid_at: datetime | None
    failed_at: datetime | None
    voided_at: datetime | None
    uncollectible_at: datetime | None


class InvoiceList(msgspec.Struct, kw_only=True):
    invoices: list[Invoice]
    total: int
    page: int
    limit: int


class PaymentMethod(msgspec.Struct, kw_only=True):
    id: str
    type: Literal["card"]
    brand: str
    last4: str
    exp_month: int
    exp_year: int
    is_default: bool
    created_at: datetime


class PaymentMethodList(msgspec.Struct):
    payment_methods: list[PaymentMethod]


class PaymentMethodChange(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``PATCH /v1/account/payment-methods/{id}``: ``{"is_default": true}`` makes the
    card the default (the other cards stop being it); a card stops being the default
    only by another becoming it."""

    is_default: bool
