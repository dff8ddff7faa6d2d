"""Tables of the point of sale product; every row carries the store (the gateway's
account) it belongs to, so one store never sees another's catalog, customers or orders.

Ids are public strings with a prefix (``prod_``, ``ord_``...) and the primary keys.
Money is integer minor units of the deployment's currency. An order keeps what it was
sold at (names, prices, every pricing step), so a later catalog change never rewrites
history, and the reports aggregate the orders and lines alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
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

ID_LENGTH = 24


class PosBase(DeclarativeBase):
    metadata = make_metadata()
    # The products' full-text index is the migration's, outside the models: an FTS5
    # table on SQLite, an expression index on PostgreSQL.
    metadata.info["unmodelled"] = ("pos_products_fts", "ix_pos_products_search")


def _id() -> Mapped[str]:
    return mapped_column(String(ID_LENGTH), primary_key=True)


def _account() -> Mapped[int]:
    return mapped_column(ForeignKey(Account.id, ondelete="CASCADE"))


class Store(PosBase):
    """A store's own counters: the next order number, taken by locking this row."""

    __tablename__ = "pos_stores"

    account_id: Mapped[int] = mapped_column(
        ForeignKey(Account.id, ondelete="CASCADE"), primary_key=True
    )
    last_order_number: Mapped[int] = mapped_column(Integer, default=0)


class Category(PosBase):
    __tablename__ = "pos_categories"
    __table_args__ = (Index("ix_pos_categories_account_order", "account_id", "sort_order"),)

    id: Mapped[str] = _id()
    account_id: Mapped[int] = _account()
    name: Mapped[str] = mapped_column(String(100))
    icon: Mapped[str | None] = mapped_column(String(100), nullable=True)
    color: Mapped[str | None] = mapped_column(String(7), nullable=True)
    """``#rrggbb``."""
    sort_order: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Product(PosBase):
    """A product of the catalog, with its stock (``stock_qty``; ``None``: not tracked,
    always in stock). Searched in full text over name and description: a GIN index on
    PostgreSQL, the FTS5 table ``pos_products_fts`` on SQLite (both in the migration)."""

    __tablename__ = "pos_products"
    __table_args__ = (Index("ix_pos_products_account_category", "account_id", "category_id"),)

    id: Mapped[str] = _id()
    account_id: Mapped[int] = _account()
    category_id: Mapped[str | None] = mapped_column(
        ForeignKey(Category.id, ondelete="SET NULL"), nullable=True
    )
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    price_cents: Mapped[int] = mapped_column(Integer)
    discount_bps: Mapped[int] = mapped_column(Integer, default=0)
    """The product's own line discount, in hundredths of a percent."""
    image_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    stock_qty: Mapped[int | None] = mapped_column(Integer, nullable=True)
    low_stock_threshold: Mapped[int] = mapped_column(Integer)
    unit: Mapped[str] = mapped_column(String(20), default="each")
    prep_minutes: Mapped[int] = mapped_column(Integer, default=0)
    modifiers: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    """``[{group, options, required, prices}]``: the wire's modifier groups."""
    tags: Mapped[list[str]] = mapped_column(JSON, default=list)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    version: Mapped[int] = mapped_column(Integer, default=1)
    """Counts the row's changes, each under its lock: the order live updates go in."""


class StockMovement(PosBase):
    """Every change of a product's stock, with why: the inventory's audit trail."""

    __tablename__ = "pos_stock_movements"
    __table_args__ = (Index("ix_pos_stock_movements_product", "product_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = _account()
    product_id: Mapped[str] = mapped_column(ForeignKey(Product.id, ondelete="CASCADE"))
    delta: Mapped[int] = mapped_column(Integer)
    qty_after: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(String(200))
    """``sale``, ``cancellation``, ``set``, ``import`` or the adjustment's own reason."""
    order_id: Mapped[str | None] = mapped_column(String(ID_LENGTH), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Customer(PosBase):
    """A store's customer; the email is unique within the store, ignoring case
    (``email_key``): another store may have a customer of the same address."""

    __tablename__ = "pos_customers"
    __table_args__ = (UniqueConstraint("account_id", "email_key"),)

    id: Mapped[str] = _id()
    account_id: Mapped[int] = _account()
    email: Mapped[str] = mapped_column(String(320))
    email_key: Mapped[str] = mapped_column(String(320))
    password_hash: Mapped[str] = mapped_column(String(200))
    full_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    phone: Mapped[str | None] = mapped_column(String(32), nullable=True)
    loyalty_points: Mapped[int] = mapped_column(BigInteger, default=0)
    addresses: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Coupon(PosBase):
    """A coupon code of a store (unique within it, ignoring case): a percentage or a
    fixed amount off, optionally expiring, optionally usable once."""

    __tablename__ = "pos_coupons"
    __table_args__ = (UniqueConstraint("account_id", "code_key"),)

    id: Mapped[str] = _id()
    account_id: Mapped[int] = _account()
    code: Mapped[str] = mapped_column(String(64))
    code_key: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(8))
    """``percent`` or ``fixed``."""
    percent_bps: Mapped[int] = mapped_column(Integer, default=0)
    amount_cents: Mapped[int] = mapped_column(Integer, default=0)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    single_use: Mapped[bool] = mapped_column(Boolean, default=False)
    used_by_order_id: Mapped[str | None] = mapped_column(String(ID_LENGTH), nullable=True)
    """The order a single-use coupon went to; set once, in that order's transaction."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Order(PosBase):
    __tablename__ = "pos_orders"
    __table_args__ = (
        UniqueConstraint("account_id", "order_number"),
        Index("ix_pos_orders_account_created", "account_id", "created_at"),
        Index("ix_pos_orders_customer_created", "customer_id", "created_at"),
    )

    id: Mapped[str] = _id()
    account_id: Mapped[int] = _account()
    order_number: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    order_type: Mapped[str] = mapped_column(String(16))
    customer_id: Mapped[str | None] = mapped_column(
        ForeignKey(Customer.id, ondelete="SET NULL"), nullable=True
    )
    table_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    delivery_address: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    notes: Mapped[str | None] = mapped_column(Text, nullable=True)
    coupon_code: Mapped[str | None] = mapped_column(String(64), nullable=True)
    currency: Mapped[str] = mapped_column(String(3))
    subtotal_cents: Mapped[int] = mapped_column(BigInteger)
    discount_cents: Mapped[int] = mapped_column(BigInteger)
    loyalty_discount_cents: Mapped[int] = mapped_column(BigInteger)
    tax_cents: Mapped[int] = mapped_column(BigInteger)
    delivery_fee_cents: Mapped[int] = mapped_column(BigInteger)
    total_cents: Mapped[int] = mapped_column(BigInteger)
    points_earned: Mapped[int] = mapped_column(BigInteger, default=0)
    estimated_ready: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    cancelled_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    version: Mapped[int] = mapped_column(Integer, default=1)
    """Counts the order's changes, each under its lock: the order live updates go in."""


class OrderLine(PosBase):
    """A line of an order as it was sold. ``account_id``, ``created_at`` and
    ``cancelled`` repeat the order's so a report sums lines without joining orders."""

    __tablename__ = "pos_order_lines"
    __table_args__ = (Index("ix_pos_order_lines_account_created", "account_id", "created_at"),)

    order_id: Mapped[str] = mapped_column(
        ForeignKey(Order.id, ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = _account()
    product_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    name: Mapped[str] = mapped_column(String(200))
    qty: Mapped[int] = mapped_column(Integer)
    modifiers: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    notes: Mapped[str | None] = mapped_column(Text, nullable=True)
    unit_price_cents: Mapped[int] = mapped_column(BigInteger)
    line_discount_cents: Mapped[int] = mapped_column(BigInteger)
    coupon_cents: Mapped[int] = mapped_column(BigInteger)
    loyalty_cents: Mapped[int] = mapped_column(BigInteger)
    total_cents: Mapped[int] = mapped_column(BigInteger)
    """After the product's own discount, before the order's coupon and loyalty."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    cancelled: Mapped[bool] = mapped_column(Boolean, default=False)
