"""The subscriptions report (``launchpad.subscriptions``) on every backend: subscriptions
started and ended per day, week and month of Los Angeles' March 2027 (clocks move on
the 14th), and the active ones and their monthly revenue at each bucket's end, yearly
prices and trials included, another workspace's left out.

Plans and customers are made through the API; subscriptions start and end through the
billing engine at fixed instants (as a paid checkout and a cancellation make them),
a cancellation at the period's end is asked for through the API and takes effect when
the engine runs past the period. The expected numbers are worked out from the
subscriptions' instants alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

from launchpad_client import LaunchpadClient, open_launchpad

from tollway import Gateway, Granularity, Period, ReportData
from tollway.billing import Interval
from tollway.testing import ProductClientFactory
from tollway_analytics.testing import analytics_key, assert_agrees, read_three_ways
from tollway_launchpad.product import LEDGER

LOS_ANGELES = ZoneInfo("America/Los_Angeles")  # UTC-8, UTC-7 from March 14th 2027
MARCH = (date(2027, 3, 1), date(2027, 3, 31))
BASIC = {"slug": "basic", "price_monthly_cents": 1000, "price_annual_cents": 12_006}
"""A year of basic is 1,000.50 a month: 1,000 to the even cent."""
PRO = {"slug": "pro", "price_monthly_cents": 2900, "price_annual_cents": 12_018}
"""A year of pro is 1,001.50 a month: 1,002."""
STARTER = {"slug": "starter", "price_monthly_cents": 500, "price_annual_cents": 5000}
"""With a 10-day trial."""


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def point(day: date, new: int, canceled: int, active: int, mrr: int) -> dict[str, Any]:
    return {"date": day, "new": new, "canceled": canceled, "active": active, "mrr": mrr}


@dataclass(frozen=True)
class Sub:
    """A subscription the test makes, and what the report must make of it."""

    name: str
    plan: str
    interval: Interval
    starts: datetime
    ends: datetime | None = None
    """When it is canceled at once (or, for ``F``, when its period ends)."""
    at_period_end: bool = False
    monthly: int = 0
    """What it brings in a month once past its trial."""
    trial_days: int = 0

    @property
    def pays_from(self) -> datetime:
        return self.starts + timedelta(days=self.trial_days)


SUBS = [
    Sub("A", "basic", "month", utc("2027-02-10 12:00"), monthly=1000),
    Sub("B", "basic", "year", utc("2027-02-20 12:00"), monthly=1000),
    # 23:30 on March 1st in Los Angeles, March 2nd in UTC.
    Sub("C", "pro", "year", utc("2027-03-02 07:30"), monthly=1002),
    # Canceled at 23:30 on the 15th in Los Angeles (PDT), the 16th in UTC.
    Sub("D", "basic", "month", utc("2027-03-05 18:00"), utc("2027-03-16 06:30"), monthly=1000),
    # Trialing until 13:00 on the 20th.
    Sub("E", "starter", "month", utc("2027-03-10 20:00"), monthly=500, trial_days=10),
    # Renewed on February 15th, canceled at the period's end: March 15th, 03:00 PDT.
    Sub(
        "F",
        "basic",
        "month",
        utc("2027-01-15 10:00"),
        utc("2027-03-15 10:00"),
        at_period_end=True,
        monthly=1000,
    ),
    # Started and canceled on the 22nd.
    Sub("G", "basic", "month", utc("2027-03-22 15:00"), utc("2027-03-22 17:00"), monthly=1000),
    # Trialing past the end of March: active, nothing a month yet.
    Sub("H", "starter", "month", utc("2027-03-25 12:00"), monthly=500, trial_days=10),
    # Over before March.
    Sub("I", "basic", "month", utc("2027-02-01 12:00"), utc("2027-02-05 12:00"), monthly=1000),
    # 23:30 on March 31st in Los Angeles, April 1st in UTC.
    Sub("J", "basic", "month", utc("2027-04-01 06:30"), monthly=1000),
    # Midnight of April 1st in Los Angeles: after March.
    Sub("K", "basic", "month", utc("2027-04-01 07:00"), monthly=1000),
]
OUTSIDER_STARTS = utc("2027-03-02 12:00")
"""When another workspace's customer subscribes."""


@dataclass
class Workspace:
    launchpad: LaunchpadClient
    customers: dict[str, int]

    @property
    def gateway(self) -> Gateway:
        return self.launchpad.gateway

    async def cancel_now(self, sub: Sub) -> None:
        assert sub.ends is not None
        async with self.gateway.database.transaction() as session:
            book = self.gateway.billing.book(session, LEDGER, self.launchpad.owner.account_id)
            await book.cancel(str(self.customers[sub.name]), immediately=True, now=sub.ends)

    async def report(
        self, first: date, last: date, granularity: Granularity, zone: ZoneInfo = LOS_ANGELES
    ) -> ReportData:
        period = Period(self.launchpad.owner.account_id, first, last, granularity, zone)
        report = self.gateway.registry.reports["launchpad.subscriptions"]
        return await report.compute(self.gateway, period)


async def seeded(launchpad: LaunchpadClient) -> Workspace:
    """The owner's workspace with :data:`SUBS`, moved past March 15th."""
    plans = {
        "basic": await launchpad.plan(name="Basic", **BASIC),
        "pro": await launchpad.plan(name="Pro", **PRO),
        "starter": await launchpad.plan(name="Starter", trial_days=10, **STARTER),
    }
    customers = {}
    for sub in SUBS:
        registered = await launchpad.register(f"{sub.name.lower()}@example.com")
        customers[sub.name] = registered["customer"]["id"]
        await launchpad.subscribe(
            customers[sub.name], plans[sub.plan]["id"], interval=sub.interval, now=sub.starts
        )
    shop = Workspace(launchpad, customers)
    for sub in SUBS:
        if sub.ends is not None and not sub.at_period_end:
            await shop.cancel_now(sub)
    # Another workspace's subscription in March is not the owner's.
    theirs = await launchpad.plan(by=launchpad.other, name="Basic", **BASIC)
    outsider = await launchpad.register("x@example.com", by=launchpad.other)
    await launchpad.subscribe(
        outsider["customer"]["id"], theirs["id"], by=launchpad.other, now=OUTSIDER_STARTS
    )
    # F renews on February 15th, is asked to end with that period, and ends then.
    await shop.gateway.billing.run_due(utc("2027-03-01 00:00"))
    f = customers["F"]
    await launchpad.call("DELETE", f"/subscriptions/{f}", json={"immediately": False})
    ran = await shop.gateway.billing.run_due(utc("2027-03-16 00:00"))
    assert (ran.renewed, ran.canceled) == (1, 1)  # A on March 10th; F
    assert (await launchpad.call("GET", f"/subscriptions/{f}"))["active"] is False
    return shop


def expected(first: date, last: date, zone: ZoneInfo) -> list[dict[str, Any]]:
    """Each day of ``first`` to ``last`` in ``zone``, from the subscriptions' instants."""
    days = []
    for n in range((last - first).days + 1):
        day = first + timedelta(days=n)

        def on(instant: datetime | None, day: date = day) -> bool:
            return instant is not None and instant.astimezone(zone).date() == day

        def by_end_of(instant: datetime | None, day: date = day) -> bool:
            return instant is not None and instant.astimezone(zone).date() <= day

        active = [sub for sub in SUBS if by_end_of(sub.starts) and not by_end_of(sub.ends)]
        days.append(
            {
                "date": day,
                "new": sum(on(sub.starts) for sub in SUBS),
                "canceled": sum(on(sub.ends) for sub in SUBS),
                "active": len(active),
                "mrr": sum(sub.monthly for sub in active if by_end_of(sub.pays_from)),
            }
        )
    return days


async def test_days_of_march_in_los_angeles(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client, settings={"currency": "eur"}) as launchpad:
        report = await (await seeded(launchpad)).report(*MARCH, "day")
    days = expected(*MARCH, LOS_ANGELES)
    assert report.series == days
    assert report.currency == "eur"
    assert report.summary == {"new": 6, "canceled": 3, "active": 6, "mrr": 4502}
    # Worked by hand: A, B and F before March; C on the 1st (23:30, the 2nd in UTC).
    assert days[0] == point(date(2027, 3, 1), 1, 0, 4, 4002)
    # D (23:30 PDT, the 16th in UTC) and F end on the 15th.
    assert days[14] == point(date(2027, 3, 15), 0, 2, 4, 3002)  # A, B, C; E trialing
    assert days[19]["mrr"] == 3502  # E pays from the 20th
    assert days[21] == point(date(2027, 3, 22), 1, 1, 4, 3502)
    assert days[30] == point(date(2027, 3, 31), 1, 0, 6, 4502)
    # Each day's active are the day before's, plus its new, less its canceled.
    for before, day in pairwise(report.series):
        assert day["active"] == before["active"] + day["new"] - day["canceled"]


async def test_weeks_start_on_monday_and_count_the_period_s_days(
    product_client: ProductClientFactory,
) -> None:
    # March 3rd 2027 is a Wednesday: its week is March 1st's, counting the 3rd to 7th.
    async with open_launchpad(product_client) as launchpad:
        report = await (await seeded(launchpad)).report(date(2027, 3, 3), date(2027, 3, 31), "week")
    assert report.series == [
        # A, B, C and F before the 3rd; D starts.
        point(date(2027, 3, 1), 1, 0, 5, 5002),
        point(date(2027, 3, 8), 1, 0, 6, 5002),  # E
        point(date(2027, 3, 15), 0, 2, 4, 3502),  # D and F end; E pays from the 20th
        point(date(2027, 3, 22), 2, 1, 5, 3502),  # G starts and ends; H trialing
        point(date(2027, 3, 29), 1, 0, 6, 4502),  # J
    ]
    assert report.summary == {"new": 5, "canceled": 3, "active": 6, "mrr": 4502}


async def test_months_and_their_ends_in_another_zone(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        workspace = await seeded(launchpad)
        report = await workspace.report(date(2027, 2, 1), date(2027, 4, 30), "month")
        in_utc = await workspace.report(*MARCH, "month", ZoneInfo("UTC"))
    assert report.series == [
        # A, B and I start, I ends; A, B and F at the end of February.
        point(date(2027, 2, 1), 3, 1, 3, 3000),
        point(date(2027, 3, 1), 6, 3, 6, 4502),
        # K starts; H pays from April 4th.
        point(date(2027, 4, 1), 1, 0, 7, 6002),
    ]
    assert report.summary == {"new": 10, "canceled": 4, "active": 7, "mrr": 6002}
    # In UTC, C starts on March 2nd and J on April 1st; D still ends in March.
    assert in_utc.series == [point(date(2027, 3, 1), 5, 3, 5, 3502)]
    assert in_utc.summary == {"new": 5, "canceled": 3, "active": 5, "mrr": 3502}


async def test_a_period_without_subscriptions_has_its_zero_buckets(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        await launchpad.plan(**BASIC)
        theirs = await launchpad.plan(by=launchpad.other, **BASIC)
        outsider = await launchpad.register(by=launchpad.other)
        await launchpad.subscribe(
            outsider["customer"]["id"], theirs["id"], by=launchpad.other, now=OUTSIDER_STARTS
        )
        first, last = date(2027, 3, 1), date(2027, 3, 3)
        period = Period(launchpad.owner.account_id, first, last, "day", LOS_ANGELES)
        report = await launchpad.gateway.registry.reports["launchpad.subscriptions"].compute(
            launchpad.gateway, period
        )
    zero = {"new": 0, "canceled": 0, "active": 0, "mrr": 0}
    assert report.series == [{"date": date(2027, 3, n), **zero} for n in (1, 2, 3)]
    assert report.summary == zero
    assert report.currency == "usd"


async def test_the_analytics_api_gives_the_same_numbers_as_json_csv_and_pdf(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(
        product_client, plugins=["launchpad", "analytics"], settings={"currency": "eur"}
    ) as launchpad:
        shop = await seeded(launchpad)
        report = await shop.report(*MARCH, "week")
        headers = await analytics_key(shop.gateway, launchpad.owner.account_id)
        params = {
            "start_date": "2027-03-01",
            "end_date": "2027-03-31",
            "granularity": "week",
            "tz": "America/Los_Angeles",
        }
        read = await read_three_ways(launchpad.client, headers, "launchpad.subscriptions", params)
        described = shop.gateway.registry.reports["launchpad.subscriptions"]
    assert report.summary == {"new": 6, "canceled": 3, "active": 6, "mrr": 4502}
    assert_agrees(read, described, report)
    assert read.json["summary"]["mrr"] == 45.02
    assert read.csv[-1]["mrr_cents"] == "4502"
    assert read.csv[-1]["mrr"] == "45.02"
