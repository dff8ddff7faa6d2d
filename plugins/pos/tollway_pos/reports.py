"""The back office's reports: a sales report over a range of days and an end-of-day
summary, both in the store's calendar (its ``timezone`` setting), and the sales summary
the analytics product serves (``pos.sales_summary``), in its caller's.

Every number is summed by the database: a report reads one row per day (or per UTC
bucket on SQLite), per product and per status and order type, never one per order.
The orders and lines of the range are found by ``(account_id, created_at)``
(``ix_pos_orders_account_created``, ``ix_pos_order_lines_account_created``), between
the UTC instants the first day starts and the last day ends. The days, and the weeks
(from Monday) and months made of them in Python, are the report kit's
(:class:`tollway.Days`, :class:`tollway.local_day`, :class:`tollway.Period`): exact
across clock changes and odd offsets on both databases.

A report's statements run at once, each on a connection of its own; a sale committed
meanwhile may reach one and not the other (a back-office report, not a ledger).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import date
from typing import Any, get_args
from zoneinfo import ZoneInfo

from sqlalchemy import BigInteger, Integer, String, bindparam, cast, false, func, select

from tollway import (
    Column,
    Days,
    Gateway,
    Period,
    Reads,
    Report,
    ReportData,
    local_day,
    utc_instant,
)
from tollway_pos import schemas
from tollway_pos.models import Order, OrderLine
from tollway_pos.pricing import round_half_even
from tollway_pos.settings import PosSettings

TOP = 10
"""Products listed in a report's top products."""
CANCELLED = "cancelled"


# Statements, built once --------------------------------------------------------------

ACCOUNT = bindparam("account_id", type_=Integer, literal_execute=True)
START = bindparam("start", type_=Integer, literal_execute=True)
"""The instant the range's first day starts, in epoch seconds."""
END = bindparam("end", type_=Integer, literal_execute=True)
"""The instant its last day ends."""
SECONDS = bindparam("seconds", type_=Integer, literal_execute=True)
"""SQLite's bucket, in seconds."""
# The store and the range are written into the SQL as numbers, as a page's offset and
# limit are (tollway.PAGE_LIMIT): as parameters they hide from PostgreSQL's planner how
# many rows the store has in the range, and after five runs of a prepared statement it
# keeps a generic plan made for a few hundred rows (an index scan, no parallel
# workers). A year of 100,000 orders then took 55 and 100-140 ms instead of 33 and
# 35-45 (orders by day, top products). Each store and range is a statement of its own,
# planned for its numbers.
_FROM = utc_instant(START)
_TO = utc_instant(END)


def _sum(amount: Any) -> Any:
    """The sum of an integer column as an integer: PostgreSQL sums ``bigint`` as
    ``numeric``, which would reach Python as a ``Decimal``."""
    return cast(func.sum(amount), BigInteger)


_DAYS = (
    select(
        local_day(
            Order.created_at,
            bindparam("zone", type_=String),
            START,
            SECONDS,
        ).label("day"),
        Order.total_cents,
    )
    .where(Order.account_id == ACCOUNT, Order.created_at >= _FROM, Order.created_at < _TO)
    .where(Order.status != CANCELLED)
    .subquery()
)
SALES_BY_DAY = select(_DAYS.c.day, func.count(), _sum(_DAYS.c.total_cents)).group_by(_DAYS.c.day)
"""Orders (cancelled ones left out) and their totals per ``local_day``, created from
``start`` to ``end``."""
SALES = ("orders", "revenue")
"""What :data:`SALES_BY_DAY` sums per day, in its order: the names of a sales series."""

_LINES_IN_RANGE = (
    OrderLine.account_id == ACCOUNT,
    OrderLine.created_at >= _FROM,
    OrderLine.created_at < _TO,
    OrderLine.cancelled == false(),
)
_REVENUE = OrderLine.total_cents - OrderLine.coupon_cents - OrderLine.loyalty_cents
_SOLD = (
    select(
        OrderLine.product_id,
        _sum(OrderLine.qty).label("qty"),
        _sum(_REVENUE).label("revenue"),
        func.max(OrderLine.created_at).label("last_sold"),
    )
    .where(*_LINES_IN_RANGE)
    .group_by(OrderLine.product_id)
)
_TOP = (
    _SOLD.order_by(
        _SOLD.selected_columns.revenue.desc(),
        _SOLD.selected_columns.qty.desc(),
        OrderLine.product_id,
    )
    .limit(TOP)
    .subquery()
)
_LAST_NAME = (
    select(OrderLine.name)
    .where(
        OrderLine.account_id == ACCOUNT,
        OrderLine.created_at == _TOP.c.last_sold,
        OrderLine.product_id == _TOP.c.product_id,
        OrderLine.cancelled == false(),
    )
    .order_by(OrderLine.name)
    .limit(1)
    .scalar_subquery()
)
TOP_PRODUCTS = select(_TOP.c.product_id, _LAST_NAME, _TOP.c.qty, _TOP.c.revenue).order_by(
    _TOP.c.revenue.desc(), _TOP.c.qty.desc(), _TOP.c.product_id
)
"""The products whose lines created from ``start`` to ``end`` (those of cancelled
orders left out) brought in the most after every discount; ties by quantity, then id.
Each is named as on its most recent line, found by its time in the
``(account_id, created_at)`` index (grouping by product and name instead would leave
PostgreSQL no estimate of how few pairs there are, and it sorts every line)."""

DAY_ORDERS = (
    select(
        Order.status,
        Order.order_type,
        func.count(),
        _sum(Order.total_cents),
        _sum(Order.tax_cents),
        _sum(Order.delivery_fee_cents),
    )
    .where(Order.account_id == ACCOUNT, Order.created_at >= _FROM, Order.created_at < _TO)
    .group_by(Order.status, Order.order_type)
)
"""Orders created from ``start`` to ``end`` per status and type, with their sums."""
DAY_LINES = select(
    func.coalesce(_sum(OrderLine.unit_price_cents * OrderLine.qty), 0),
    func.coalesce(
        _sum(OrderLine.line_discount_cents + OrderLine.coupon_cents + OrderLine.loyalty_cents), 0
    ),
).where(*_LINES_IN_RANGE)
"""What the lines of orders not cancelled cost before discounts, and the discounts."""


def average(total: int, count: int) -> int:
    """``total / count`` rounded half to even; 0 without anything to average."""
    return round_half_even(total, count) if count else 0


def _row(*columns: Any) -> tuple[Any, ...]:
    return columns


# The reports --------------------------------------------------------------------------


async def sales_report(
    reads: Reads,
    account_id: int,
    *,
    date_from: date,
    date_to: date,
    group_by: schemas.GroupBy,
    zone: ZoneInfo,
    currency: str,
) -> schemas.SalesReport:
    """Orders created on the store's days ``date_from`` to ``date_to`` (included, in
    ``zone``; ``date_from <= date_to``), cancelled ones left out: their count, revenue
    (``total_cents``), average, top products and a point per day, week or month of the
    range, oldest first, empty ones included. A week's or month's point is dated its
    first day, even before ``date_from``, and counts the range's orders only."""
    period = Period(account_id, date_from, date_to, group_by, zone)
    days = period.days
    params = days.params(account_id)
    by_day, top = await asyncio.gather(
        reads.all(SALES_BY_DAY, _row, **params),
        reads.all(TOP_PRODUCTS, schemas.TopProduct, **params),
    )
    series = period.series(by_day, SALES, days)
    total_orders, total_revenue = _totals(series)
    return schemas.SalesReport(
        date_from=date_from.isoformat(),
        date_to=date_to.isoformat(),
        group_by=group_by,
        currency=currency,
        summary=schemas.SalesSummary(
            total_orders=total_orders,
            total_revenue_cents=total_revenue,
            average_order_cents=average(total_revenue, total_orders),
            top_products=top,
        ),
        series=[
            schemas.SalesPoint(point["date"].isoformat(), point["orders"], point["revenue"])
            for point in series
        ],
    )


async def sales_summary(gateway: Gateway, period: Period) -> ReportData:
    """``pos.sales_summary``: :func:`sales_report`'s orders, revenue and average for
    ``period`` (its days in the caller's zone, not the store's), without top products;
    money in the store's ``currency``."""
    days = period.days
    by_day = await gateway.database.reads.all(SALES_BY_DAY, _row, **days.params(period.account_id))
    series = period.series(by_day, SALES, days)
    total_orders, total_revenue = _totals(series)
    return ReportData(
        summary={
            "total_revenue": total_revenue,
            "total_orders": total_orders,
            "average_order_value": average(total_revenue, total_orders),
        },
        series=series,
        currency=gateway.product_settings(PosSettings).currency,
    )


SALES_SUMMARY = Report(
    id="pos.sales_summary",
    name="Sales summary",
    description=(
        "Orders and revenue (cancelled orders left out) per day, week or month, and their average."
    ),
    compute=sales_summary,
    summary=(
        Column("total_revenue", "money"),
        Column("total_orders", "count"),
        Column("average_order_value", "money"),
    ),
    series=(Column("revenue", "money"), Column("orders", "count")),
)
"""The point of sale's report for the analytics product."""


def _totals(series: list[dict[str, Any]]) -> tuple[int, int]:
    """The orders and revenue of a sales series."""
    return sum(point["orders"] for point in series), sum(point["revenue"] for point in series)


async def daily_summary(
    reads: Reads, account_id: int, *, day: date, zone: ZoneInfo, currency: str
) -> schemas.DailySummary:
    """The store's ``day`` (in ``zone``): its orders by status (cancelled included) and
    by type, and the sums of those not cancelled, from the lines' gross and discounts
    to the orders' tax, delivery fees and totals; its top products."""
    params = Days(day, day, zone).params(account_id)
    groups, [(gross, discounts)], top = await asyncio.gather(
        reads.all(DAY_ORDERS, _row, **params),
        reads.all(DAY_LINES, _row, **params),
        reads.all(TOP_PRODUCTS, schemas.TopProduct, **params),
    )
    by_status: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    revenue_by_type: Counter[str] = Counter()
    tax = delivery_fees = 0
    for status, order_type, orders, total, tax_cents, fee_cents in groups:
        by_status[status] += orders
        if status != CANCELLED:
            by_type[order_type] += orders
            revenue_by_type[order_type] += total
            tax += tax_cents
            delivery_fees += fee_cents
    total_orders, total_revenue = by_type.total(), revenue_by_type.total()
    return schemas.DailySummary(
        date=day.isoformat(),
        currency=currency,
        total_orders=total_orders,
        cancelled_orders=by_status[CANCELLED],
        gross_sales_cents=gross,
        discount_cents=discounts,
        tax_cents=tax,
        delivery_fee_cents=delivery_fees,
        total_revenue_cents=total_revenue,
        average_order_cents=average(total_revenue, total_orders),
        by_status=[
            schemas.StatusCount(status, by_status[status])
            for status in _in_order(schemas.OrderStatus, by_status)
        ],
        by_type=[
            schemas.TypeTotal(order_type, by_type[order_type], revenue_by_type[order_type])
            for order_type in _in_order(schemas.OrderType, by_type)
        ],
        top_products=top,
    )


def _in_order(names: Any, present: Counter[str]) -> list[Any]:
    """The values of the ``Literal`` ``names`` in ``present``, in the literal's order
    (the status flow; the order types as the spec lists them)."""
    return [name for name in get_args(names) if name in present]
