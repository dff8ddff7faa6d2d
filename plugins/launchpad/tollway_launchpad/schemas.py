"""The subscription billing product's wire types (msgspec Structs), as
contracts/launchpad.yaml says.

Request structs forbid unknown fields and carry what a schema can say as
``msgspec.Meta`` (a violation is a 400); the rules it cannot say (a slug or an email
already taken, a plan of another workspace) are the services' (409, 422).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from tollway import MAX_ROW_ID

Interval = Literal["month", "year"]
LiveStatus = Literal["trialing", "active", "past_due"]
"""A subscription that gives access: what ``active=true`` covers."""
Status = Literal["trialing", "active", "past_due", "canceled"]

RowId = Annotated[int, msgspec.Meta(ge=1, le=MAX_ROW_ID)]
Cents = Annotated[int, msgspec.Meta(ge=0, le=MAX_ROW_ID)]
"""A price in minor units: what the database's integer columns hold."""
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern="^[^\\x00-\\x1f\\x7f]+$")]
"""Text shown to customers: no control characters (surrounding spaces are dropped)."""
Slug = Annotated[
    str, msgspec.Meta(min_length=1, max_length=100, pattern="^[a-z0-9]+(?:-[a-z0-9]+)*$")
]
"""A plan's handle in URLs and events: lowercase words joined by single hyphens."""
TrialDays = Annotated[int, msgspec.Meta(ge=0, le=365)]
Feature = Annotated[
    str, msgspec.Meta(min_length=1, max_length=200, pattern="^[^\\x00-\\x1f\\x7f]+$")
]
Features = Annotated[list[Feature], msgspec.Meta(max_length=100)]
QuotaName = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern="^[a-z][a-z0-9_]*$")]
QuotaValue = Annotated[int, msgspec.Meta(ge=0, le=MAX_ROW_ID)]
Quota = Annotated[dict[QuotaName, QuotaValue], msgspec.Meta(max_length=50)]
"""What a plan allows, by name (``users``, ``storage_gb``)."""
SortOrder = Annotated[int, msgspec.Meta(ge=-MAX_ROW_ID, le=MAX_ROW_ID)]
Email = Annotated[
    str,
    msgspec.Meta(
        min_length=3, max_length=320, pattern="^[^@\\s\\x00-\\x1f\\x7f]+@[^@\\s\\x00-\\x1f\\x7f]+$"
    ),
]
"""An address with one ``@`` and no spaces; compared ignoring case."""
Password = Annotated[str, msgspec.Meta(min_length=8, max_length=1024)]
"""At least 8 characters (spec 8); the upper bound keeps hashing cheap."""
FullName = Annotated[str, msgspec.Meta(max_length=200, pattern="^[^\\x00-\\x1f\\x7f]*$")]


# Plans --------------------------------------------------------------------------------


class Plan(msgspec.Struct, frozen=True):
    """A plan a workspace sells (spec 2.3)."""

    id: int
    name: str
    slug: str
    price_monthly_cents: int
    price_annual_cents: int
    trial_days: int
    features: list[str]
    quota: dict[str, int]
    is_active: bool
    sort_order: int


class PlanList(msgspec.Struct, frozen=True):
    plans: list[Plan]


class PlanCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/launchpad/plans``."""

    name: Name
    slug: Slug
    price_monthly_cents: Cents
    price_annual_cents: Cents
    trial_days: TrialDays = 0
    features: Features = msgspec.field(default_factory=list)
    quota: Quota = msgspec.field(default_factory=dict)
    is_active: bool = True
    sort_order: SortOrder = 0


class PlanUpdate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``PATCH /v1/launchpad/plans/{plan_id}``: only the given fields change.
    Subscriptions keep the price they were sold at; features and quota apply at once."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    slug: Slug | msgspec.UnsetType = msgspec.UNSET
    price_monthly_cents: Cents | msgspec.UnsetType = msgspec.UNSET
    price_annual_cents: Cents | msgspec.UnsetType = msgspec.UNSET
    trial_days: TrialDays | msgspec.UnsetType = msgspec.UNSET
    features: Features | msgspec.UnsetType = msgspec.UNSET
    quota: Quota | msgspec.UnsetType = msgspec.UNSET
    is_active: bool | msgspec.UnsetType = msgspec.UNSET
    sort_order: SortOrder | msgspec.UnsetType = msgspec.UNSET


class PlanRef(msgspec.Struct, frozen=True):
    """A plan as a subscription names it."""

    id: int
    name: str
    slug: str


# Customers ----------------------------------------------------------------------------


class Customer(msgspec.Struct, frozen=True):
    """A workspace's customer (spec 2.3)."""

    id: int
    email: str
    full_name: str | None
    is_active: bool
    created_at: datetime


class CustomerBrief(msgspec.Struct, frozen=True):
    """The customer in the sign-in and current-customer answers."""

    id: int
    email: str
    full_name: str | None


class Registration(msgspec.Struct, frozen=True):
    """``201`` of ``POST /v1/launchpad/customers/register``."""

    token: str
    customer: Customer


class SignIn(msgspec.Struct, frozen=True):
    """``200`` of ``POST /v1/launchpad/customers/login``."""

    token: str
    customer: CustomerBrief


class CustomerRegister(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    email: Email
    password: Password
    full_name: FullName | None = None


class CustomerLogin(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    email: Annotated[
        str, msgspec.Meta(min_length=1, max_length=320, pattern="^[^\\x00-\\x1f\\x7f]+$")
    ]
    """Not checked as an address: a malformed one signs nobody in (401)."""
    password: Annotated[str, msgspec.Meta(min_length=1, max_length=1024)]


class CustomerSubscription(msgspec.Struct, frozen=True):
    """The subscription in ``GET /v1/launchpad/customers/me`` (spec 2.3)."""

    id: int
    status: LiveStatus
    billing_interval: Interval
    amount_cents: int
    current_period_end: datetime
    cancel_at_period_end: bool
    plan_name: str
    features: list[str]
    quota: dict[str, int]


class Me(msgspec.Struct, frozen=True):
    customer: CustomerBrief
    subscription: CustomerSubscription | None
    """``None`` without a live subscription."""


# Subscriptions ------------------------------------------------------------------------


class PendingChange(msgspec.Struct, frozen=True):
    """A change of plan or interval that takes effect at the period's end."""

    plan: PlanRef
    billing_interval: Interval
    amount_cents: int
    effective_at: datetime


class SubscriptionStatus(msgspec.Struct, frozen=True):
    """``GET /v1/launchpad/subscriptions/{customer_id}`` (spec 2.3): whether the
    customer has access, to what, and until when."""

    active: bool
    status: LiveStatus | None
    subscription_id: int | None
    plan: PlanRef | None
    features: list[str]
    quota: dict[str, int]
    renews_at: datetime | None
    """``None`` when there is nothing to renew or it ends at the period's end."""
    billing_interval: Interval | None
    amount_cents: int | None
    current_period_end: datetime | None
    cancel_at_period_end: bool
    pending_change: PendingChange | None


class SubscriptionChange(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``PATCH /v1/launchpad/subscriptions/{customer_id}``: at least one field."""

    plan_id: RowId | msgspec.UnsetType = msgspec.UNSET
    billing_interval: Interval | msgspec.UnsetType = msgspec.UNSET


class Cancel(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``DELETE /v1/launchpad/subscriptions/{customer_id}``."""

    immediately: bool = False


class Cancellation(msgspec.Struct, frozen=True):
    """What ``DELETE /v1/launchpad/subscriptions/{customer_id}`` did."""

    subscription_id: int
    status: Status
    cancel_at_period_end: bool
    canceled_at: datetime | None
    current_period_end: datetime
    access_ends_at: datetime
    """When the customer loses access: now, or the end of the paid period."""
