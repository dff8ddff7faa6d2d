"""The back-office reports' wire types."""

from __future__ import annotations

import msgspec

from tollway_pos.schemas.fields import GroupBy, OrderStatus, OrderType


class TopProduct(msgspec.Struct, frozen=True, gc=False):
    product_id: str
    name: str
    qty_sold: int
    revenue_cents: int
    """What the product's lines brought in after every discount, before tax."""


class SalesSummary(msgspec.Struct, frozen=True):
    total_orders: int
    total_revenue_cents: int
    average_order_cents: int
    top_products: list[TopProduct]


class SalesPoint(msgspec.Struct, frozen=True, gc=False):
    date: str
    """The first day of the day, week (Monday) or month, in the store's time zone."""
    orders: int
    revenue_cents: int


class SalesReport(msgspec.Struct, frozen=True):
    """``GET /v1/pos/reports/sales`` (spec 2.5); cancelled orders are left out."""

    date_from: str
    date_to: str
    group_by: GroupBy
    currency: str
    summary: SalesSummary
    series: list[SalesPoint]


class StatusCount(msgspec.Struct, frozen=True, gc=False):
    status: OrderStatus
    orders: int


class TypeTotal(msgspec.Struct, frozen=True, gc=False):
    order_type: OrderType
    orders: int
    revenue_cents: int


class DailySummary(msgspec.Struct, frozen=True):
    """``GET /v1/pos/reports/daily/{date}``: the store's day, in its time zone."""

    date: str
    currency: str
    total_orders: int
    """Orders placed that day, cancelled ones left out."""
    cancelled_orders: int
    gross_sales_cents: int
    """Lines before any discount."""
    discount_cents: int
    """Product discounts, coupons and loyalty."""
    tax_cents: int
    delivery_fee_cents: int
    total_revenue_cents: int
    average_order_cents: int
    by_status: list[StatusCount]
    by_type: list[TypeTotal]
    top_products: list[TopProduct]
