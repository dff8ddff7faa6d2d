"""The ``link.clicks`` report: the clicks on all of an account's links per day, week or
month of the caller's zone, from the 15-minute pre-aggregates, checked against the same
clicks counted one by one here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from clicks_client import CRAWLER, ClicksClient, open_clicks
from sqlalchemy import select

from tollway import Granularity, Period, ReportData
from tollway.testing import ProductClientFactory
from tollway_analytics.testing import analytics_key, assert_agrees, read_three_ways
from tollway_link.models import Link


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@dataclass(frozen=True)
class Made:
    """A click the test made: on which link, when, and whether the report counts it
    (a person's click on one of the owner's links)."""

    link: int
    at: datetime
    counted: bool


def bucket_of(day: date, granularity: Granularity) -> date:
    if granularity == "week":
        return day - timedelta(days=day.weekday())
    if granularity == "month":
        return day.replace(day=1)
    return day


def expected(
    made: list[Made], start: date, end: date, granularity: Granularity, tz: str
) -> tuple[dict[date, int], set[int]]:
    """Counted clicks per bucket (every bucket of the range, zeros included) and the
    links clicked, from the clicks one by one."""
    buckets = {
        bucket_of(start + timedelta(days=n), granularity): 0 for n in range((end - start).days + 1)
    }
    links = set()
    for click in made:
        day = click.at.astimezone(ZoneInfo(tz)).date()
        if click.counted and start <= day <= end:
            buckets[bucket_of(day, granularity)] += 1
            links.add(click.link)
    return buckets, links


async def report(
    link: ClicksClient, start: date, end: date, granularity: Granularity = "day", tz: str = "UTC"
) -> ReportData:
    period = Period(link.owner.account_id, start, end, granularity, ZoneInfo(tz))
    return await link.gateway.registry.reports["link.clicks"].compute(link.gateway, period)


def by_bucket(data: ReportData) -> dict[date, int]:
    assert list(data.series[0]) == ["date", "clicks"]
    return {point["date"]: point["clicks"] for point in data.series}


async def seed(link: ClicksClient) -> list[Made]:
    """Clicks on the owner's links ``a`` and ``b`` (``c`` never clicked) around March
    2025, bots' and ``HEAD`` requests among them, and on a link of another account."""
    _, a = await link.link()
    _, b = await link.link()
    await link.link()
    theirs = await link.product_client.call(
        "POST",
        "/links",
        json={"destination_url": "https://example.org/"},
        by=link.other,
        expect=201,
    )
    other = await link_key(link, theirs["id"])
    made: list[Made] = []
    clicks: list[Any] = []

    def click(key: int, at: str, counted: bool = True, **fields: Any) -> None:
        moment = utc(at)
        made.append(Made(key, moment, counted))
        clicks.append(link.click(key, at=moment.timestamp(), **fields))

    click(a, "2025-03-04T23:59:00")  # 5 March in Tokyo
    click(a, "2025-03-05T00:10:00")  # 4 March in New York
    click(a, "2025-03-05T23:30:00", address="1.1.1.1")  # 6 March in Tokyo
    for n in range(3):
        click(a, "2025-03-10T12:00:00", address=f"9.9.9.{n}")
    click(a, "2025-03-10T04:30:00")  # 00:30 in New York on daylight time (EST: the 9th)
    click(b, "2025-03-10T12:05:00")
    click(b, "2025-03-17T15:00:00", counted=False, user_agent=CRAWLER, address="133.242.0.3")
    click(b, "2025-03-17T15:00:00", counted=False, head=True)
    click(a, "2025-03-18T20:00:00")  # 19 March in Tokyo
    click(b, "2025-03-19T00:00:00")
    click(b, "2025-04-01T00:00:00")
    for _ in range(2):
        click(other, "2025-03-10T12:00:00", counted=False, account_id=link.other.account_id)
    assert await link.clicks.write(clicks) == len(clicks)
    return made


async def link_key(link: ClicksClient, public_id: str) -> int:
    async with link.gateway.database.transaction() as session:
        key = await session.scalar(select(Link.id).where(Link.public_id == public_id))
    assert key is not None
    return int(key)


async def test_clicks_per_day_in_utc(product_client: ProductClientFactory) -> None:
    async with open_clicks(product_client) as link:
        made = await seed(link)
        start, end = date(2025, 3, 5), date(2025, 3, 18)
        data = await report(link, start, end)
        clicks = by_bucket(data)
        assert list(clicks) == [start + timedelta(days=n) for n in range(14)]
        assert clicks == {
            day: {date(2025, 3, 5): 2, date(2025, 3, 10): 5, date(2025, 3, 18): 1}.get(day, 0)
            for day in clicks
        }
        assert clicks == expected(made, start, end, "day", "UTC")[0]
        assert data.summary == {"clicks": 8, "links": 2}
        assert data.currency is None


async def test_a_zone_moves_clicks_near_utc_midnight_to_its_own_days(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client) as link:
        made = await seed(link)
        start, end = date(2025, 3, 5), date(2025, 3, 18)
        for tz in ("Asia/Tokyo", "America/New_York", "Asia/Kathmandu"):
            data = await report(link, start, end, tz=tz)
            counted, links = expected(made, start, end, "day", tz)
            assert by_bucket(data) == counted, tz
            assert data.summary == {"clicks": sum(counted.values()), "links": len(links)}, tz
        tokyo = by_bucket(await report(link, start, end, tz="Asia/Tokyo"))
        # 23:59 UTC on the 4th is the 5th in Tokyo; 23:30 UTC on the 5th, the 6th; 20:00
        # UTC on the 18th, the 19th (past the range).
        assert (tokyo[date(2025, 3, 5)], tokyo[date(2025, 3, 6)]) == (2, 1)
        assert sum(tokyo.values()) == 8
        new_york = by_bucket(await report(link, start, end, tz="America/New_York"))
        # 00:10 UTC on the 5th is the 4th in New York (past the range); 04:30 UTC on
        # the 10th is 00:30 there, an hour after the clocks went forward on the 9th.
        assert (new_york[date(2025, 3, 5)], new_york[date(2025, 3, 9)]) == (1, 0)
        assert new_york[date(2025, 3, 10)] == 5
        assert new_york[date(2025, 3, 18)] == 2  # 20:00 UTC and 00:00 UTC on the 19th


@pytest.mark.parametrize(
    ("granularity", "start", "end", "buckets"),
    [
        # A Wednesday to a Tuesday: the first week is dated its Monday, before the start.
        (
            "week",
            date(2025, 3, 5),
            date(2025, 3, 18),
            [date(2025, 3, 3), date(2025, 3, 10), date(2025, 3, 17)],
        ),
        (
            "month",
            date(2025, 2, 20),
            date(2025, 4, 2),
            [date(2025, 2, 1), date(2025, 3, 1), date(2025, 4, 1)],
        ),
    ],
)
async def test_weeks_from_monday_and_months(
    product_client: ProductClientFactory,
    granularity: Granularity,
    start: date,
    end: date,
    buckets: list[date],
) -> None:
    async with open_clicks(product_client) as link:
        made = await seed(link)
        for tz in ("UTC", "Asia/Tokyo"):
            data = await report(link, start, end, granularity, tz)
            clicks = by_bucket(data)
            assert list(clicks) == buckets
            counted, links = expected(made, start, end, granularity, tz)
            assert clicks == counted
            assert data.summary == {"clicks": sum(counted.values()), "links": len(links)}
        weeks_or_months = by_bucket(await report(link, start, end, granularity))
        if granularity == "week":
            # The week of the 3rd counts the 5th to the 9th only.
            assert weeks_or_months == {buckets[0]: 2, buckets[1]: 5, buckets[2]: 1}
        else:
            assert weeks_or_months == {buckets[0]: 0, buckets[1]: 10, buckets[2]: 1}


async def test_an_account_without_clicks_has_every_bucket_at_zero(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client) as link:
        await seed(link)
        period = Period(
            link.other.account_id, date(2025, 3, 1), date(2025, 3, 31), "day", ZoneInfo("UTC")
        )
        their = await link.gateway.registry.reports["link.clicks"].compute(link.gateway, period)
        # The other account's own clicks count for it, and only them.
        assert by_bucket(their) == {date(2025, 3, n): 2 if n == 10 else 0 for n in range(1, 32)}
        assert their.summary == {"clicks": 2, "links": 1}
        nothing = await report(link, date(2025, 5, 1), date(2025, 5, 3), "day", "Asia/Tokyo")
        assert nothing.series == [{"date": date(2025, 5, n), "clicks": 0} for n in range(1, 4)]
        assert nothing.summary == {"clicks": 0, "links": 0}


async def test_the_analytics_api_gives_the_same_clicks_as_json_csv_and_pdf(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client, plugins=["link", "analytics"]) as link:
        made = await seed(link)
        start, end = date(2025, 3, 5), date(2025, 3, 18)
        data = await report(link, start, end, tz="Asia/Tokyo")
        assert by_bucket(data) == expected(made, start, end, "day", "Asia/Tokyo")[0]
        headers = await analytics_key(link.gateway, link.owner.account_id)
        params = {"start_date": "2025-03-05", "end_date": "2025-03-18", "tz": "Asia/Tokyo"}
        read = await read_three_ways(link.client, headers, "link.clicks", params)
        assert_agrees(read, link.gateway.registry.reports["link.clicks"], data)
