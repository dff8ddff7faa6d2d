"""The back office's reports (``tollway_pos.reports``) on every backend: the store's
calendar days across clock changes and odd offsets, weeks from Monday, months, empty
periods, top products after discounts, a worked end-of-day summary, and never another
store's orders. Orders and lines are written straight through the models, as an order
stores them; each expected number is worked out by hand.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import TypeVar
from zoneinfo import ZoneInfo

import msgspec
import pytest
from sqlalchemy import insert

from tollway import Gateway
from tollway.testing import GatewayFactory
from tollway_pos.models import Order, OrderLine
from tollway_pos.reports import daily_summary, sales_report
from tollway_pos.schemas import (
    DailySummary,
    GroupBy,
    SalesPoint,
    SalesReport,
    SalesSummary,
    StatusCount,
    TopProduct,
    TypeTotal,
)

NEW_YORK = ZoneInfo("America/New_York")
KOLKATA = ZoneInfo("Asia/Kolkata")
PARIS = ZoneInfo("Europe/Paris")
_numbers = itertools.count(1)
T = TypeVar("T")


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@dataclass(frozen=True)
class Line:
    product_id: str
    name: str
    qty: int
    unit: int
    line_discount: int = 0
    coupon: int = 0
    loyalty: int = 0

    @property
    def total(self) -> int:
        return self.unit * self.qty - self.line_discount


TEA = Line("prod_Tea0000000000000", "Tea", 1, 1000)


@dataclass
class Stores:
    """A gateway with the point of sale tables and two stores: ``owner`` and ``other``."""

    gateway: Gateway
    owner: int
    other: int

    async def sell(
        self,
        at: datetime,
        *lines: Line,
        status: str = "delivered",
        order_type: str = "takeaway",
        tax: int = 0,
        fee: int = 0,
        store: int | None = None,
    ) -> None:
        """An order of ``lines`` created at ``at``, priced as an order is: its total is
        the lines' less the coupon and loyalty discounts, plus tax and fee."""
        account = self.owner if store is None else store
        number = next(_numbers)
        order_id = f"ord_{number:016d}"
        subtotal = sum(line.total for line in lines)
        coupon = sum(line.coupon for line in lines)
        loyalty = sum(line.loyalty for line in lines)
        async with self.gateway.database.transaction() as session:
            await session.execute(
                insert(Order).values(
                    id=order_id,
                    account_id=account,
                    order_number=number,
                    status=status,
                    order_type=order_type,
                    currency="usd",
                    subtotal_cents=subtotal,
                    discount_cents=coupon,
                    loyalty_discount_cents=loyalty,
                    tax_cents=tax,
                    delivery_fee_cents=fee,
                    total_cents=subtotal - coupon - loyalty + tax + fee,
                    estimated_ready=at,
                    created_at=at,
                    updated_at=at,
                )
            )
            await session.execute(
                insert(OrderLine),
                [
                    {
                        "order_id": order_id,
                        "position": position,
                        "account_id": account,
                        "product_id": line.product_id,
                        "name": line.name,
                        "qty": line.qty,
                        "unit_price_cents": line.unit,
                        "line_discount_cents": line.line_discount,
                        "coupon_cents": line.coupon,
                        "loyalty_cents": line.loyalty,
                        "total_cents": line.total,
                        "created_at": at,
                        "cancelled": status == "cancelled",
                    }
                    for position, line in enumerate(lines)
                ],
            )

    async def report(
        self,
        date_from: date,
        date_to: date,
        *,
        group_by: GroupBy = "day",
        zone: ZoneInfo = NEW_YORK,
        store: int | None = None,
    ) -> SalesReport:
        report = await sales_report(
            self.gateway.database.reads,
            self.owner if store is None else store,
            date_from=date_from,
            date_to=date_to,
            group_by=group_by,
            zone=zone,
            currency="usd",
        )
        return as_sent(report)

    async def day(self, day: date, *, zone: ZoneInfo = NEW_YORK) -> DailySummary:
        summary = await daily_summary(
            self.gateway.database.reads, self.owner, day=day, zone=zone, currency="usd"
        )
        return as_sent(summary)


def as_sent(answer: T) -> T:
    """``answer`` through the wire's JSON: a number the database returned as a Decimal
    would arrive as a string, and fail to decode."""
    return msgspec.json.decode(msgspec.json.encode(answer), type=type(answer))


@pytest.fixture
async def stores(gateway_factory: GatewayFactory) -> Stores:
    gateway = await gateway_factory(plugins=["pos"])
    owner = await gateway.accounts.create_account("Owner's store")
    other = await gateway.accounts.create_account("Another store")
    return Stores(gateway, owner, other)


def points(report: SalesReport) -> list[tuple[str, int, int]]:
    return [(point.date, point.orders, point.revenue_cents) for point in report.series]


# Days of the store ----------------------------------------------------------------------


async def test_new_york_days_follow_the_clocks_on_both_changes(stores: Stores) -> None:
    # 2026-03-08 lasts 23 hours in New York (05:00 to 04:00 UTC), 2026-11-01 25 hours
    # (04:00 to 05:00 UTC).
    for at in (
        "2026-03-08 04:59:59",  # Saturday the 7th, 23:59:59 EST
        "2026-03-08 05:00:00",  # the 8th's midnight
        "2026-03-09 03:59:59",  # the 8th, 23:59:59 EDT
        "2026-03-09 04:00:00",  # the 9th
        "2026-11-01 03:59:59",  # October 31st, 23:59:59 EDT
        "2026-11-01 04:00:00",  # November 1st
        "2026-11-02 04:59:59",  # November 1st, 23:59:59 EST
        "2026-11-02 05:00:00",  # November 2nd
    ):
        await stores.sell(utc(at), TEA)

    spring = await stores.report(date(2026, 3, 7), date(2026, 3, 9))
    assert points(spring) == [
        ("2026-03-07", 1, 1000),
        ("2026-03-08", 2, 2000),
        ("2026-03-09", 1, 1000),
    ]
    autumn = await stores.report(date(2026, 10, 31), date(2026, 11, 2))
    assert points(autumn) == [
        ("2026-10-31", 1, 1000),
        ("2026-11-01", 2, 2000),
        ("2026-11-02", 1, 1000),
    ]
    assert (await stores.day(date(2026, 3, 8))).total_orders == 2
    assert (await stores.day(date(2026, 11, 1))).total_orders == 2
    # The range's own ends: the 8th alone has its two orders, not its neighbours'.
    only_the_8th = await stores.report(date(2026, 3, 8), date(2026, 3, 8))
    assert only_the_8th.summary.total_orders == 2
    assert points(only_the_8th) == [("2026-03-08", 2, 2000)]


async def test_kolkata_days_start_at_half_past_six_utc(stores: Stores) -> None:
    # +05:30 all year: January 15th is 2026-01-14 18:30 UTC to 2026-01-15 18:30 UTC.
    for at in (
        "2026-01-14 18:29:59",
        "2026-01-14 18:30:00",
        "2026-01-15 07:00:00",
        "2026-01-15 18:29:59",
        "2026-01-15 18:30:00",
    ):
        await stores.sell(utc(at), TEA)

    report = await stores.report(date(2026, 1, 14), date(2026, 1, 16), zone=KOLKATA)
    assert points(report) == [
        ("2026-01-14", 1, 1000),
        ("2026-01-15", 3, 3000),
        ("2026-01-16", 1, 1000),
    ]
    assert (await stores.day(date(2026, 1, 15), zone=KOLKATA)).total_orders == 3
    in_new_york = await stores.report(date(2026, 1, 14), date(2026, 1, 16))
    assert points(in_new_york) == [  # UTC-5: 05:00 to 05:00 UTC
        ("2026-01-14", 2, 2000),
        ("2026-01-15", 3, 3000),
        ("2026-01-16", 0, 0),
    ]


@pytest.mark.parametrize(
    ("zone", "first"),
    [
        ("Asia/Kathmandu", date(2026, 5, 1)),  # +05:45
        ("Australia/Lord_Howe", date(2026, 4, 4)),  # +11:00 to +10:30 on the 5th
        ("Pacific/Chatham", date(2026, 4, 4)),  # +13:45 to +12:45 on the 5th
        ("America/Santiago", date(2026, 9, 5)),  # clocks skip midnight on the 6th
        ("Europe/London", date(2026, 3, 28)),  # GMT to BST on the 29th
    ],
)
async def test_every_midnight_of_a_zone_splits_the_orders(
    stores: Stores, zone: str, first: date
) -> None:
    """An order a second before each of four local midnights lands on the day before,
    one at it on the day of, whatever the zone's offsets; each order's amount is its
    own, so a day that took a neighbour's order shows it."""
    tz = ZoneInfo(zone)
    for n in range(4):
        midnight = datetime.combine(first + timedelta(days=n), time(), tz).astimezone(UTC)
        await stores.sell(midnight - timedelta(seconds=1), Line(TEA.product_id, "Tea", 1, n + 1))
        await stores.sell(midnight, Line(TEA.product_id, "Tea", 1, 100 * (n + 1)))

    report = await stores.report(first, first + timedelta(days=2), zone=tz)
    assert points(report) == [
        ((first + timedelta(days=n)).isoformat(), 2, 100 * (n + 1) + n + 2) for n in range(3)
    ]
    assert report.summary.total_orders == 6
    assert (await stores.day(first + timedelta(days=1), zone=tz)).total_revenue_cents == 203


# Groups ---------------------------------------------------------------------------------


async def test_weeks_start_on_monday_and_months_on_the_first(stores: Stores) -> None:
    # March 4th 2026 is a Wednesday, April 14th a Tuesday; Paris moves to summer time
    # on March 29th. Orders at local noon, two of them outside the range.
    for day, cents in (
        (date(2026, 3, 3), 100_000),  # before the range, in its first week
        (date(2026, 3, 4), 1_000),
        (date(2026, 3, 8), 2_000),  # a Sunday: still the week of March 2nd
        (date(2026, 3, 9), 4_000),  # Monday: the next week
        (date(2026, 3, 29), 8_000),
        (date(2026, 3, 31), 16_000),
        (date(2026, 4, 14), 32_000),
        (date(2026, 4, 15), 200_000),  # after the range, in its last week
    ):
        await stores.sell(
            datetime.combine(day, time(12), PARIS), Line("prod_X000000000000000", "X", 1, cents)
        )

    first, last = date(2026, 3, 4), date(2026, 4, 14)
    weeks = await stores.report(first, last, group_by="week", zone=PARIS)
    assert weeks.group_by == "week"
    assert points(weeks) == [
        ("2026-03-02", 2, 3_000),
        ("2026-03-09", 1, 4_000),
        ("2026-03-16", 0, 0),
        ("2026-03-23", 1, 8_000),
        ("2026-03-30", 1, 16_000),
        ("2026-04-06", 0, 0),
        ("2026-04-13", 1, 32_000),
    ]
    months = await stores.report(first, last, group_by="month", zone=PARIS)
    assert points(months) == [("2026-03-01", 5, 31_000), ("2026-04-01", 1, 32_000)]
    days = await stores.report(first, last, group_by="day", zone=PARIS)
    assert len(days.series) == 42
    assert days.series[0] == SalesPoint("2026-03-04", 1, 1_000)
    assert days.series[1] == SalesPoint("2026-03-05", 0, 0)
    assert days.series[-1] == SalesPoint("2026-04-14", 1, 32_000)
    for report in (weeks, months, days):
        assert report.summary.total_orders == 6
        assert report.summary.total_revenue_cents == 63_000
        assert report.summary.average_order_cents == 10_500
        assert (report.date_from, report.date_to) == ("2026-03-04", "2026-04-14")


async def test_a_range_without_orders_has_its_zero_points(stores: Stores) -> None:
    await stores.sell(utc("2026-06-10 12:00:00"), TEA, store=stores.other)
    report = await stores.report(date(2026, 6, 1), date(2026, 7, 31), group_by="month")
    assert points(report) == [("2026-06-01", 0, 0), ("2026-07-01", 0, 0)]
    assert report.summary == SalesSummary(
        total_orders=0, total_revenue_cents=0, average_order_cents=0, top_products=[]
    )
    assert await stores.day(date(2026, 6, 10)) == DailySummary(
        date="2026-06-10",
        currency="usd",
        total_orders=0,
        cancelled_orders=0,
        gross_sales_cents=0,
        discount_cents=0,
        tax_cents=0,
        delivery_fee_cents=0,
        total_revenue_cents=0,
        average_order_cents=0,
        by_status=[],
        by_type=[],
        top_products=[],
    )


# What is counted ------------------------------------------------------------------------


async def test_cancelled_orders_and_other_stores_are_left_out(stores: Stores) -> None:
    noon = utc("2026-05-05 16:00:00")
    await stores.sell(noon, Line("prod_A000000000000000", "A", 2, 500), tax=80)
    await stores.sell(noon, Line("prod_B000000000000000", "B", 1, 700))
    await stores.sell(noon, Line("prod_C000000000000000", "C", 9, 9_000), status="cancelled")
    await stores.sell(noon, Line("prod_D000000000000000", "D", 1, 50_000), store=stores.other)

    report = await stores.report(date(2026, 5, 5), date(2026, 5, 5))
    assert points(report) == [("2026-05-05", 2, 1_780)]
    assert (report.summary.total_orders, report.summary.total_revenue_cents) == (2, 1_780)
    assert report.summary.average_order_cents == 890
    assert report.summary.top_products == [
        TopProduct("prod_A000000000000000", "A", 2, 1_000),
        TopProduct("prod_B000000000000000", "B", 1, 700),
    ]
    summary = await stores.day(date(2026, 5, 5))
    assert (summary.total_orders, summary.cancelled_orders) == (2, 1)
    assert summary.by_status == [StatusCount("delivered", 2), StatusCount("cancelled", 1)]
    assert summary.gross_sales_cents == 1_700
    assert summary.total_revenue_cents == 1_780

    theirs = await stores.report(date(2026, 5, 5), date(2026, 5, 5), store=stores.other)
    assert points(theirs) == [("2026-05-05", 1, 50_000)]
    assert theirs.summary.top_products == [TopProduct("prod_D000000000000000", "D", 1, 50_000)]


async def test_top_products_rank_what_they_brought_in_after_discounts(stores: Stores) -> None:
    at = utc("2026-02-10 15:00:00")
    later = at + timedelta(hours=2)
    sold = [
        # A grossed the most, but half went to a coupon: 1,000 - 500.
        Line("prod_A000000000000000", "A", 1, 1_000, coupon=500),
        # B: 600 and D: 400, each renamed since (named as on their latest lines).
        Line("prod_B000000000000000", "Latte", 1, 200),
        # C and D tie at 400: D sold more. E and F tie at 300 and 1: by id.
        Line("prod_D000000000000000", "Cappuccino", 1, 200),
        Line("prod_C000000000000000", "C", 1, 400),
        Line("prod_F000000000000000", "F", 1, 300),
        Line("prod_E000000000000000", "E", 1, 300),
        Line("prod_I000000000000000", "I", 1, 70),
        Line("prod_J000000000000000", "J", 1, 65),
        # G, H and M tie at 50 for the last two places: M sold two, then G's id is
        # first. G: 100 less 50 of loyalty; H: 500 less its own 450 discount.
        Line("prod_G000000000000000", "G", 1, 100, loyalty=50),
        Line("prod_H000000000000000", "H", 1, 500, line_discount=450),
        Line("prod_M000000000000000", "M", 2, 25),
        Line("prod_K000000000000000", "K", 1, 20),
    ]
    await stores.sell(at, *sold)
    await stores.sell(later, Line("prod_B000000000000000", "Caffe latte", 2, 200))
    await stores.sell(later, Line("prod_D000000000000000", "Cortado", 1, 200))
    await stores.sell(later, Line("prod_Z000000000000000", "Z", 1, 99_999), status="cancelled")

    expected = [
        TopProduct("prod_B000000000000000", "Caffe latte", 3, 600),
        TopProduct("prod_A000000000000000", "A", 1, 500),
        TopProduct("prod_D000000000000000", "Cortado", 2, 400),
        TopProduct("prod_C000000000000000", "C", 1, 400),
        TopProduct("prod_E000000000000000", "E", 1, 300),
        TopProduct("prod_F000000000000000", "F", 1, 300),
        TopProduct("prod_I000000000000000", "I", 1, 70),
        TopProduct("prod_J000000000000000", "J", 1, 65),
        TopProduct("prod_M000000000000000", "M", 2, 50),
        TopProduct("prod_G000000000000000", "G", 1, 50),
    ]
    report = await stores.report(date(2026, 2, 1), date(2026, 2, 28), group_by="month")
    assert report.summary.top_products == expected
    assert (await stores.day(date(2026, 2, 10))).top_products == expected


async def test_the_daily_summary_of_a_worked_day(stores: Stores) -> None:
    # New York's 23-hour March 8th: 2026-03-08 05:00 to 2026-03-09 04:00 UTC.
    burger = Line("prod_Burger0000000000", "Burger", 2, 899, coupon=100)
    fries = Line("prod_Fries00000000000", "Fries", 1, 350, line_discount=35)
    await stores.sell(
        utc("2026-03-08 15:00:00"), burger, fries, order_type="dine_in", tax=165
    )  # 1,798 + 315 - 100 + 165 = 2,178
    await stores.sell(
        utc("2026-03-08 20:00:00"),
        Line("prod_Burger0000000000", "Burger", 1, 899, loyalty=45),
        status="ready",
        tax=68,
    )  # 899 - 45 + 68 = 922
    await stores.sell(
        utc("2026-03-09 03:30:00"),  # 23:30 EDT
        Line("prod_Fries00000000000", "Fries", 3, 350),
        order_type="delivery",
        tax=84,
        fee=500,
    )  # 1,050 + 84 + 500 = 1,634
    await stores.sell(
        utc("2026-03-08 12:00:00"), Line("prod_Shake00000000000", "Shake", 1, 500), status="pending"
    )  # 500
    await stores.sell(
        utc("2026-03-08 18:00:00"),
        Line("prod_Burger0000000000", "Burger", 5, 899),
        status="cancelled",
        tax=370,
    )
    await stores.sell(utc("2026-03-09 04:00:00"), TEA)  # the 9th
    await stores.sell(utc("2026-03-08 04:59:59"), TEA)  # the 7th
    await stores.sell(utc("2026-03-08 15:00:00"), TEA, store=stores.other)

    assert await stores.day(date(2026, 3, 8)) == DailySummary(
        date="2026-03-08",
        currency="usd",
        total_orders=4,
        cancelled_orders=1,
        gross_sales_cents=1_798 + 350 + 899 + 1_050 + 500,
        discount_cents=100 + 35 + 45,
        tax_cents=165 + 68 + 84,
        delivery_fee_cents=500,
        total_revenue_cents=5_234,
        average_order_cents=1_308,  # 1,308.5, to the even cent
        by_status=[
            StatusCount("pending", 1),
            StatusCount("ready", 1),
            StatusCount("delivered", 2),
            StatusCount("cancelled", 1),
        ],
        by_type=[
            TypeTotal("dine_in", 1, 2_178),
            TypeTotal("takeaway", 2, 922 + 500),
            TypeTotal("delivery", 1, 1_634),
        ],
        top_products=[
            TopProduct("prod_Burger0000000000", "Burger", 3, 1_798 - 100 + 899 - 45),
            TopProduct("prod_Fries00000000000", "Fries", 4, 315 + 1_050),
            TopProduct("prod_Shake00000000000", "Shake", 1, 500),
        ],
    )
    report = await stores.report(date(2026, 3, 8), date(2026, 3, 8))
    assert (report.summary.total_orders, report.summary.total_revenue_cents) == (4, 5_234)
    assert report.summary.average_order_cents == 1_308
