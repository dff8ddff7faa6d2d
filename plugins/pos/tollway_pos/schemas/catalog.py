"""The catalog's, stock's, coupons' and webhook registration's wire types."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from tollway import MAX_URL_LENGTH
from tollway_pos.schemas.fields import (
    MAX_CENTS,
    NOT_BLANK,
    PRINTABLE,
    Bps,
    Cents,
    Color,
    CouponCode,
    Id,
    ImageUrl,
    LongText,
    Name,
    ShortText,
    StockQty,
    Tags,
    Timestamp,
)


class Category(msgspec.Struct, frozen=True, gc=False):
    id: str
    name: str
    icon: str | None
    color: str | None
    sort_order: int


class CategoryCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/pos/categories``."""

    name: Annotated[str, msgspec.Meta(min_length=1, max_length=100, pattern=NOT_BLANK)]
    icon: ShortText | None = None
    color: Color | None = None
    sort_order: Annotated[int, msgspec.Meta(ge=-1_000_000, le=1_000_000)] = 0


class Categories(msgspec.Struct, frozen=True):
    categories: list[Category]


Option = Annotated[str, msgspec.Meta(min_length=1, max_length=100, pattern=NOT_BLANK)]


class ModifierGroup(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A choice made on a product's line: one option of ``options`` (several when
    ``multiple``); ``required``: a line without one is refused. ``prices`` holds the
    options that cost extra, per unit."""

    group: Annotated[str, msgspec.Meta(min_length=1, max_length=100, pattern=NOT_BLANK)]
    options: Annotated[list[Option], msgspec.Meta(min_length=1, max_length=50)]
    required: bool = False
    multiple: bool = False
    prices: dict[Option, Cents] = msgspec.field(default_factory=dict)


ModifierGroups = Annotated[list[ModifierGroup], msgspec.Meta(max_length=20)]


class Product(msgspec.Struct, frozen=True, gc=False):
    """A product as the API shows it (spec 2.5), with its stock."""

    id: str
    name: str
    description: str
    price_cents: int
    currency: str
    category_id: str | None
    image_url: str | None
    in_stock: bool
    """A product whose stock is not tracked is always in stock."""
    stock_qty: int | None
    """``None``: stock is not tracked."""
    low_stock_threshold: int
    unit: str
    discount_bps: int
    prep_minutes: int
    modifiers: list[ModifierGroup]
    tags: list[str]
    is_active: bool
    created_at: datetime
    updated_at: datetime


class Products(msgspec.Struct, frozen=True):
    products: list[Product]
    total: int
    offset: int


class ProductCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/pos/products``."""

    name: Name
    price_cents: Cents
    description: LongText = ""
    category_id: Id | None = None
    image_url: ImageUrl | None = None
    stock_qty: StockQty | None = None
    """``None``: stock is not tracked (always in stock)."""
    low_stock_threshold: StockQty | None = None
    """``None``: the store's default (``low_stock_threshold`` setting)."""
    unit: Annotated[str, msgspec.Meta(min_length=1, max_length=20, pattern=NOT_BLANK)] = "each"
    discount_bps: Bps = 0
    prep_minutes: Annotated[int, msgspec.Meta(ge=0, le=1_440)] = 0
    modifiers: ModifierGroups = msgspec.field(default_factory=list)
    tags: Tags = msgspec.field(default_factory=list)
    is_active: bool = True


class ProductUpdate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``PATCH /v1/pos/products/{product_id}``: only the given fields change;
    ``null`` clears an optional one. Stock changes through adjustments."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    price_cents: Cents | msgspec.UnsetType = msgspec.UNSET
    description: LongText | msgspec.UnsetType = msgspec.UNSET
    category_id: Id | msgspec.UnsetType | None = msgspec.UNSET
    image_url: ImageUrl | msgspec.UnsetType | None = msgspec.UNSET
    low_stock_threshold: StockQty | msgspec.UnsetType = msgspec.UNSET
    unit: (
        Annotated[str, msgspec.Meta(min_length=1, max_length=20, pattern=NOT_BLANK)]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    discount_bps: Bps | msgspec.UnsetType = msgspec.UNSET
    prep_minutes: Annotated[int, msgspec.Meta(ge=0, le=1_440)] | msgspec.UnsetType = msgspec.UNSET
    modifiers: ModifierGroups | msgspec.UnsetType = msgspec.UNSET
    tags: Tags | msgspec.UnsetType = msgspec.UNSET
    is_active: bool | msgspec.UnsetType = msgspec.UNSET


class Stock(msgspec.Struct, frozen=True, gc=False):
    """``GET /v1/pos/products/{product_id}/stock`` (spec 2.5)."""

    product_id: str
    in_stock: bool
    qty: int | None
    """``None``: stock is not tracked."""
    low_stock_threshold: int
    low_stock: bool


class InventoryItem(msgspec.Struct, frozen=True, gc=False):
    """A product whose stock is tracked (spec 2.5)."""

    product_id: str
    product_name: str
    qty: int
    low_stock_threshold: int
    low_stock: bool
    """``qty`` at or below the threshold."""
    unit: str


class Inventory(msgspec.Struct, frozen=True):
    inventory: list[InventoryItem]


class StockAdjustment(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/pos/inventory/{product_id}/adjustments``: exactly one of
    ``delta`` (added; negative takes away) and ``set`` (the counted quantity)."""

    delta: Annotated[int, msgspec.Meta(ge=-1_000_000_000, le=1_000_000_000)] | None = None
    set: StockQty | None = None
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=NOT_BLANK)] = (
        "adjustment"
    )


class CouponCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/pos/coupons``: ``percent_bps`` for ``percent``, ``amount_cents``
    for ``fixed``."""

    code: CouponCode
    type: Literal["percent", "fixed"]
    percent_bps: Annotated[int, msgspec.Meta(ge=1, le=10_000)] | None = None
    amount_cents: Annotated[int, msgspec.Meta(ge=1, le=MAX_CENTS)] | None = None
    expires_at: Timestamp | None = None
    single_use: bool = False


class Coupon(msgspec.Struct, frozen=True):
    id: str
    code: str
    type: Literal["percent", "fixed"]
    percent_bps: int | None
    amount_cents: int | None
    expires_at: datetime | None
    single_use: bool
    used: bool
    created_at: datetime


class WebhookCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/pos/webhooks`` (spec 4.5)."""

    url: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_URL_LENGTH)]
    events: Annotated[
        list[Annotated[str, msgspec.Meta(min_length=1, max_length=100)]],
        msgspec.Meta(min_length=1, max_length=50),
    ]
    description: Annotated[str, msgspec.Meta(max_length=200, pattern=PRINTABLE)] | None = None


class Webhook(msgspec.Struct, frozen=True):
    """The registered endpoint, as the developer product shows it; ``secret`` (its
    HMAC signing secret) is shown this once."""

    id: int
    url: str
    events: list[str]
    description: str
    is_active: bool
    disabled_reason: str | None
    created_at: datetime
    secret_prefix: str
    secret: str
