"""The orders' and carts' wire types: lines as priced, every pricing step's amount."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from tollway_pos.schemas.fields import (
    NOT_BLANK,
    PRINTABLE,
    Cents,
    CouponCode,
    Id,
    Name,
    Notes,
    OrderStatus,
    OrderType,
    Qty,
    ShortText,
)


class ModifierChoice(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    group: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
    option: Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class LineInput(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """An order or cart line (spec 2.5)."""

    product_id: Id
    qty: Qty
    modifiers: Annotated[list[ModifierChoice], msgspec.Meta(max_length=50)] = msgspec.field(
        default_factory=list
    )
    notes: Notes | None = None


Lines = Annotated[list[LineInput], msgspec.Meta(min_length=1, max_length=100)]


class Line(msgspec.Struct, frozen=True, gc=False):
    """A priced line, of a cart or an order: what each pricing step took."""

    product_id: str
    name: str
    qty: int
    modifiers: list[ModifierChoice]
    notes: str | None
    unit_price_cents: int
    """The product's price and its chosen options' surcharges."""
    line_discount_cents: int
    """The product's own discount."""
    coupon_cents: int
    """This line's share of the coupon (largest remainder)."""
    loyalty_cents: int
    """This line's share of the loyalty discount."""
    total_cents: int
    """``unit_price_cents * qty - line_discount_cents``."""


class DeliveryAddress(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    line1: Name
    city: Annotated[str, msgspec.Meta(min_length=1, max_length=100, pattern=NOT_BLANK)]
    line2: ShortText | None = None
    postal_code: Annotated[str, msgspec.Meta(max_length=20, pattern=PRINTABLE)] | None = None
    country: Annotated[str, msgspec.Meta(pattern="^[A-Z]{2}$")] | None = None
    instructions: Notes | None = None


class OrderCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/pos/orders``."""

    order_type: OrderType
    items: Lines
    customer_id: Id | None = None
    """A store customer; with an ``X-Customer-Token`` the order is that customer's."""
    table_id: (
        Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=NOT_BLANK)] | None
    ) = None
    """``dine_in`` orders only."""
    delivery_address: DeliveryAddress | None = None
    """Required on ``delivery`` orders, refused on others."""
    notes: Notes | None = None
    coupon_code: CouponCode | None = None


class OrderUpdate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``PATCH /v1/pos/orders/{order_id}``: the next status."""

    status: OrderStatus


class Order(msgspec.Struct, frozen=True):
    """An order (spec 2.5): its lines as sold and every pricing step's amount."""

    id: str
    order_number: int
    status: OrderStatus
    order_type: OrderType
    items: list[Line]
    customer_id: str | None
    table_id: str | None
    delivery_address: DeliveryAddress | None
    notes: str | None
    coupon_code: str | None
    subtotal_cents: int
    discount_cents: int
    """The coupon's."""
    loyalty_discount_cents: int
    tax_cents: int
    delivery_fee_cents: int
    total_cents: int
    currency: str
    points_earned: int
    """Loyalty points the order earned its customer (once delivered)."""
    estimated_ready: datetime
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    cancelled_at: datetime | None


class OrderEnvelope(msgspec.Struct, frozen=True):
    order: Order


class Orders(msgspec.Struct, frozen=True):
    orders: list[Order]
    total: int
    offset: int


class CustomerOrders(msgspec.Struct, frozen=True):
    orders: list[Order]


class CartRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/pos/cart/calculate``."""

    items: Lines
    coupon_code: CouponCode | None = None
    customer_id: Id | None = None
    delivery_fee_cents: Cents = 0


class CouponCheck(msgspec.Struct, frozen=True):
    code: str
    valid: bool
    type: Literal["percent", "fixed"] | None
    """``None`` for a code the store does not have."""
    value: float | None
    """Percent off (``10``), or the amount off in major units (``5.0``)."""
    reason: str | None
    """Why a code is not valid: ``unknown``, ``expired`` or ``used``."""


class Cart(msgspec.Struct, frozen=True):
    """``POST /v1/pos/cart/calculate`` (spec 2.5): what an order of these lines costs now."""

    items: list[Line]
    subtotal_cents: int
    discount_cents: int
    discount_label: str | None
    loyalty_discount: float
    loyalty_discount_cents: int
    tax_cents: int
    delivery_fee_cents: int
    total_cents: int
    currency: str
    coupon: CouponCheck | None
