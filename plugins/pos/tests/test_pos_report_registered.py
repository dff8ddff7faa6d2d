"""The sales summary the point of sale registers for the analytics product
(``pos.sales_summary``) on every backend: orders and revenue per day, week and month of
the caller's zone (New York's, not the store's Tokyo), every bucket present, a week
dated before the period counting its days only, cancelled orders and another store's
left out, the average to the even cent, money in the store's currency.

Orders are placed (and one cancelled) through the API, then dated as the test needs;
the expected numbers are worked out from the orders' totals and instants.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from pos_client import order, pos_client, product
from sqlalchemy import update

from tollway import Granularity, Period, ReportData
from tollway.testing import ProductClient, ProductClientFactory, Tenant
from tollway_pos.models import Order, OrderLine

NEW_YORK = ZoneInfo("America/New_York")  # UTC-5; UTC-4 from March 8th 2026
SETTINGS = {"currency": "eur", "timezone": "Asia/Tokyo"}


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def point(day: date, revenue: int, orders: int) -> dict[str, Any]:
    return {"date": day, "revenue": revenue, "orders": orders}


async def sell(
    pos: ProductClient,
    at: datetime,
    items: list[tuple[dict[str, Any], int]],
    total: int,
    *,
    by: Tenant | None = None,
) -> dict[str, Any]:
    """An order of ``items`` (product, quantity) through the API, dated ``at``; its
    total must be ``total``."""
    tenant = by or pos.owner
    body = [{"product_id": item["id"], "qty": qty} for item, qty in items]
    placed: dict[str, Any] = await order(pos, body, headers=tenant.headers)
    assert placed["total_cents"] == total
    async with pos.gateway.database.transaction() as session:
        await session.execute(update(Order).where(Order.id == placed["id"]).values(created_at=at))
        await session.execute(
            update(OrderLine).where(OrderLine.order_id == placed["id"]).values(created_at=at)
        )
    return placed


async def sales(
    pos: ProductClient, first: date, last: date, granularity: Granularity, zone: ZoneInfo
) -> ReportData:
    report = pos.gateway.registry.reports["pos.sales_summary"]
    period = Period(pos.owner.account_id, first, last, granularity, zone)
    return await report.compute(pos.gateway, period)


async def open_store(pos: ProductClient) -> None:
    """The owner's orders (New York's days in the comments), and another store's."""
    a = await product(pos, "A", price_cents=1001)
    b = await product(pos, "B", price_cents=250)
    await sell(pos, utc("2026-02-28 12:00"), [(b, 1)], 250)  # February 28th
    await sell(pos, utc("2026-03-02 04:30"), [(a, 1)], 1001)  # 23:30 on the 1st (EST)
    await sell(pos, utc("2026-03-02 05:00"), [(b, 2)], 500)  # midnight of the 2nd
    await sell(pos, utc("2026-03-04 15:00"), [(a, 2), (b, 1)], 2252)  # the 4th
    cancelled = await sell(pos, utc("2026-03-04 16:00"), [(a, 3)], 3003)
    moved = await pos.call("PATCH", f"/orders/{cancelled['id']}", json={"status": "cancelled"})
    assert moved["order"]["status"] == "cancelled"
    await sell(pos, utc("2026-03-09 03:59"), [(b, 1)], 250)  # 23:59 on the 8th (EDT)
    await sell(pos, utc("2026-03-31 12:00"), [(a, 1), (b, 1)], 1251)  # the 31st
    await sell(pos, utc("2026-04-01 03:30"), [(a, 1)], 1001)  # 23:30 on March 31st
    await sell(pos, utc("2026-04-01 04:00"), [(b, 3)], 750)  # midnight of April 1st
    theirs = await product(pos, "Theirs", price_cents=9999, by=pos.other)
    await sell(pos, utc("2026-03-04 15:00"), [(theirs, 1)], 9999, by=pos.other)


async def test_days_are_the_caller_s_not_utc_s_nor_the_store_s(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client, settings=SETTINGS) as pos:
        await open_store(pos)
        in_new_york = await sales(pos, date(2026, 3, 1), date(2026, 3, 9), "day", NEW_YORK)
        in_utc = await sales(pos, date(2026, 3, 1), date(2026, 3, 9), "day", ZoneInfo("UTC"))
    assert in_new_york.series == [
        point(date(2026, 3, 1), 1001, 1),
        point(date(2026, 3, 2), 500, 1),
        point(date(2026, 3, 3), 0, 0),
        point(date(2026, 3, 4), 2252, 1),  # the cancelled order left out
        point(date(2026, 3, 5), 0, 0),
        point(date(2026, 3, 6), 0, 0),
        point(date(2026, 3, 7), 0, 0),
        point(date(2026, 3, 8), 250, 1),
        point(date(2026, 3, 9), 0, 0),
    ]
    # 4,003 / 4 = 1,000.75
    assert in_new_york.summary == {
        "total_revenue": 4003,
        "total_orders": 4,
        "average_order_value": 1001,
    }
    assert in_new_york.currency == "eur"
    assert in_utc.series == [
        point(date(2026, 3, 1), 0, 0),
        point(date(2026, 3, 2), 1501, 2),
        point(date(2026, 3, 3), 0, 0),
        point(date(2026, 3, 4), 2252, 1),
        point(date(2026, 3, 5), 0, 0),
        point(date(2026, 3, 6), 0, 0),
        point(date(2026, 3, 7), 0, 0),
        point(date(2026, 3, 8), 0, 0),
        point(date(2026, 3, 9), 250, 1),
    ]


async def test_weeks_from_monday_and_months(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client, settings=SETTINGS) as pos:
        await open_store(pos)
        # March 4th 2026 is a Wednesday: its week is March 2nd's, counting the 4th to 8th.
        weeks = await sales(pos, date(2026, 3, 4), date(2026, 3, 31), "week", NEW_YORK)
        months = await sales(pos, date(2026, 2, 20), date(2026, 4, 10), "month", NEW_YORK)
        empty = await sales(pos, date(2026, 5, 1), date(2026, 6, 30), "month", NEW_YORK)
    assert weeks.series == [
        point(date(2026, 3, 2), 2252 + 250, 2),
        point(date(2026, 3, 9), 0, 0),
        point(date(2026, 3, 16), 0, 0),
        point(date(2026, 3, 23), 0, 0),
        point(date(2026, 3, 30), 1251 + 1001, 2),
    ]
    # 4,754 / 4 = 1,188.5: to the even cent.
    assert weeks.summary == {"total_revenue": 4754, "total_orders": 4, "average_order_value": 1188}
    assert months.series == [
        point(date(2026, 2, 1), 250, 1),
        point(date(2026, 3, 1), 1001 + 500 + 2252 + 250 + 1251 + 1001, 6),
        point(date(2026, 4, 1), 750, 1),
    ]
    # 7,255 / 8 = 906.875
    assert months.summary == {"total_revenue": 7255, "total_orders": 8, "average_order_value": 907}
    assert empty.series == [point(date(2026, 5, 1), 0, 0), point(date(2026, 6, 1), 0, 0)]
    assert empty.summary == {"total_revenue": 0, "total_orders": 0, "average_order_value": 0}
