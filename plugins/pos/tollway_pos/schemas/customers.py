"""The store customers' wire types."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec

from tollway_pos.schemas.fields import (
    NOT_BLANK,
    PRINTABLE,
    Email,
    Name,
    Password,
    Phone,
    ShortText,
)


class AddressInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    label: ShortText = "home"
    line1: Name
    city: Annotated[str, msgspec.Meta(min_length=1, max_length=100, pattern=NOT_BLANK)]
    default: bool = False


class Address(msgspec.Struct, frozen=True, gc=False):
    id: str
    label: str
    line1: str
    city: str
    default: bool


class CustomerRegister(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/pos/customers/register``."""

    email: Email
    password: Password
    full_name: Annotated[str, msgspec.Meta(max_length=200, pattern=PRINTABLE)] | None = None
    phone: Phone | None = None
    addresses: Annotated[list[AddressInput], msgspec.Meta(max_length=10)] = msgspec.field(
        default_factory=list
    )


class CustomerLogin(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    email: Annotated[str, msgspec.Meta(min_length=1, max_length=320, pattern=PRINTABLE)]
    password: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class Customer(msgspec.Struct, frozen=True, gc=False):
    """The register and login response's customer (spec 2.5)."""

    id: str
    email: str
    full_name: str | None
    loyalty_points: int


class SignedIn(msgspec.Struct, frozen=True):
    """``register`` (201) and ``login`` (200): the customer and their two tokens."""

    customer: Customer
    token: str
    """The customer JWT: ``X-Customer-Token`` with the store's API key."""
    token_expires_at: datetime
    realtime_token: str
    """The live streams' credential (``?token=``), for this customer's orders and the
    store's stock; never accepted as ``X-Customer-Token``."""
    realtime_token_expires_at: datetime


class Profile(msgspec.Struct, frozen=True):
    """The signed-in customer (spec 2.5)."""

    id: str
    email: str
    full_name: str | None
    phone: str | None
    loyalty_points: int
    loyalty_tier: str
    addresses: list[Address]
    created_at: datetime


class CustomerProfile(msgspec.Struct, frozen=True):
    customer: Profile
