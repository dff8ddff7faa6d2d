"""``GET /v1/link/analytics/{id}``: clicks per day of the caller's zone, visitors,
referrers, countries and devices, from the pre-aggregates the click writer keeps,
checked against the same numbers counted click by click."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import product
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from clicks_client import CRAWLER, PHONE, ClicksClient, open_clicks
from sqlalchemy import update

from tollway.testing import ProductClientFactory
from tollway_link.analytics import Analytics
from tollway_link.models import Link
from tollway_link.schemas import ClickAnalytics, Period
from tollway_link.store import store

TOKYO = "Asia/Tokyo"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def analytics(link: ClicksClient, public_id: str, **params: Any) -> Any:
    return await link.product_client.call("GET", f"/analytics/{public_id}", params=params)


def row(by_day: list[dict[str, Any]], day: date) -> dict[str, Any]:
    return next(each for each in by_day if each["date"] == day.isoformat())


async def test_a_click_at_2330_utc_is_counted_on_the_next_day_in_tokyo(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client) as link:
        public_id, key = await link.link(code="tokyo")
        day = datetime.now(UTC).date() - timedelta(days=3)
        at = datetime.combine(day, datetime.min.time(), UTC) + timedelta(hours=23, minutes=30)
        click = link.click(
            key,
            at=at.timestamp(),
            address="81.2.69.160",
            user_agent=PHONE,
            referer="https://l.facebook.com/l.php?u=x",
        )
        await link.clicks.write([click])

        in_utc = await analytics(link, public_id)
        assert in_utc["link_id"] == public_id
        assert in_utc["short_url"].endswith("/l/tokyo")
        assert in_utc["period"] == "30d"
        assert row(in_utc["clicks_by_day"], day) == {
            "date": day.isoformat(),
            "clicks": 1,
            "unique": 1,
        }
        in_tokyo = await analytics(link, public_id, tz=TOKYO)
        assert row(in_tokyo["clicks_by_day"], day)["clicks"] == 0
        assert row(in_tokyo["clicks_by_day"], day + timedelta(days=1)) == {
            "date": (day + timedelta(days=1)).isoformat(),
            "clicks": 1,
            "unique": 1,
        }
        for answer in (in_utc, in_tokyo):
            assert answer["total_clicks"] == answer["unique_visitors"] == 1
            assert answer["top_referrers"] == [{"referrer": "facebook.com", "clicks": 1}]
            assert answer["top_countries"] == [
                {"country": "GB", "country_name": "United Kingdom", "clicks": 1}
            ]
            assert answer["devices"] == {"mobile": 1, "desktop": 0, "tablet": 0}


@pytest.mark.parametrize(("period", "days"), [("7d", 7), ("30d", 30), ("90d", 90)])
async def test_every_day_of_the_period_has_a_row_newest_first(
    product_client: ProductClientFactory, period: str, days: int
) -> None:
    async with open_clicks(product_client) as link:
        public_id, _ = await link.link()
        for tz in ("UTC", TOKYO, "America/Los_Angeles"):
            answer = await analytics(link, public_id, period=period, tz=tz)
            today = datetime.now(ZoneInfo(tz)).date()
            assert [each["date"] for each in answer["clicks_by_day"]] == [
                (today - timedelta(days=n)).isoformat() for n in range(days)
            ]
            assert {(each["clicks"], each["unique"]) for each in answer["clicks_by_day"]} == {
                (0, 0)
            }
            assert answer["total_clicks"] == answer["unique_visitors"] == 0
            assert answer["top_referrers"] == answer["top_countries"] == []
            assert answer["devices"] == {"mobile": 0, "desktop": 0, "tablet": 0}


async def test_all_starts_on_the_day_the_link_was_made(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client) as link:
        public_id, key = await link.link()
        assert len((await analytics(link, public_id, period="all"))["clicks_by_day"]) == 1
        created = datetime.now(UTC) - timedelta(days=40)
        async with link.gateway.database.transaction() as session:
            await session.execute(update(Link).where(Link.id == key).values(created_at=created))
        for tz in ("UTC", TOKYO, "Pacific/Pago_Pago"):
            by_day = (await analytics(link, public_id, period="all", tz=tz))["clicks_by_day"]
            assert by_day[-1]["date"] == created.astimezone(ZoneInfo(tz)).date().isoformat()
            assert by_day[0]["date"] == datetime.now(ZoneInfo(tz)).date().isoformat()


async def test_bots_and_head_requests_count_only_when_asked_for(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client) as link:
        public_id, key = await link.link()
        await link.clicks.write(
            [
                link.click(key, referer="https://news.example.co.uk/a"),
                link.click(key, head=True),
                link.click(key, user_agent=CRAWLER, address="133.242.0.3"),
            ]
        )
        people = await analytics(link, public_id)
        assert (people["total_clicks"], people["unique_visitors"]) == (1, 1)
        assert people["clicks_by_day"][0] == {
            "date": people["clicks_by_day"][0]["date"],
            "clicks": 1,
            "unique": 1,
        }
        assert people["top_referrers"] == [{"referrer": "example.co.uk", "clicks": 1}]
        assert people["top_countries"] == [
            {"country": "US", "country_name": "United States", "clicks": 1}
        ]
        everyone = await analytics(link, public_id, include_bots="true")
        # The HEAD request came from the same browser: one more click, no new visitor.
        assert (everyone["total_clicks"], everyone["unique_visitors"]) == (3, 2)
        assert everyone["clicks_by_day"][0]["unique"] == 2
        assert everyone["top_referrers"] == [
            {"referrer": "(direct)", "clicks": 2},
            {"referrer": "example.co.uk", "clicks": 1},
        ]
        assert everyone["top_countries"] == [
            {"country": "US", "country_name": "United States", "clicks": 2},
            {"country": "JP", "country_name": "Japan", "clicks": 1},
        ]
        assert everyone["devices"] == {"mobile": 0, "desktop": 3, "tablet": 0}


async def test_two_clicks_of_one_visitor_are_one_unique(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client) as link:
        public_id, key = await link.link()
        yesterday = datetime.now(UTC) - timedelta(days=1)
        await link.clicks.write(
            [
                link.click(key),
                link.click(key),
                link.click(key, address="1.1.1.1"),
                link.click(key, at=yesterday.timestamp()),
            ]
        )
        answer = await analytics(link, public_id)
        assert answer["total_clicks"] == 4
        assert answer["unique_visitors"] == 2
        today, before = answer["clicks_by_day"][:2]
        assert (today["clicks"], today["unique"]) == (3, 2)
        assert (before["clicks"], before["unique"]) == (1, 1)


async def test_another_accounts_link_is_not_found(product_client: ProductClientFactory) -> None:
    async with open_clicks(product_client) as link:
        public_id, _ = await link.link()
        await link.product_client.call("GET", f"/analytics/{public_id}", by=link.other, expect=404)
        await link.product_client.call("GET", "/analytics/lnk_0000000000000000", expect=404)
        await link.product_client.call("GET", "/analytics/1", expect=400)


@pytest.mark.parametrize(
    "tz", ["Mars/Olympus_Mons", "asia/tokyo", "../../etc/passwd", "", "Europe/"]
)
async def test_an_unknown_time_zone_is_refused(
    product_client: ProductClientFactory, tz: str
) -> None:
    async with open_clicks(product_client) as link:
        public_id, _ = await link.link()
        refused = await link.product_client.call(
            "GET", f"/analytics/{public_id}", params={"tz": tz}, expect=422
        )
        assert list(refused) == ["detail"]
        assert "time zone" in refused["detail"]


async def test_a_period_that_is_not_offered_is_a_bad_request(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client) as link:
        public_id, _ = await link.link()
        for params in ({"period": "14d"}, {"tz": "A" * 65}, {"include_bots": "maybe"}):
            refused = await link.product_client.call(
                "GET", f"/analytics/{public_id}", params=params, expect=400
            )
            assert list(refused) == ["detail"]


# Against the clicks counted one by one ------------------------------------------------


@dataclass(frozen=True)
class Made:
    """A click as stored, made up directly (no enrichment)."""

    at: datetime
    visitor: str
    referrer: str
    country: str
    device: str
    bot: bool

    def row(self, link: int, account: int) -> dict[str, Any]:
        return {
            "id": uuid.uuid4().hex,
            "link_id": link,
            "account_id": account,
            "clicked_at": self.at,
            "referrer": self.referrer,
            "country": self.country,
            "device": self.device,
            "visitor": self.visitor,
            "bot": self.bot,
        }


def expected(
    clicks: Iterable[Made], tz: ZoneInfo, first: date, last: date, include_bots: bool
) -> dict[str, Any]:
    """The analytics of ``clicks``, counted one by one in Python."""
    counted = [
        click
        for click in clicks
        if (include_bots or not click.bot) and first <= click.at.astimezone(tz).date() <= last
    ]
    by_day: dict[date, list[Made]] = {}
    for click in counted:
        by_day.setdefault(click.at.astimezone(tz).date(), []).append(click)

    def top(field: str) -> list[tuple[str, int]]:
        counts = Counter(getattr(click, field) for click in counted)
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]

    days = (last - first).days + 1
    return {
        "total_clicks": len(counted),
        "unique_visitors": len({click.visitor for click in counted}),
        "clicks_by_day": [
            (
                (last - timedelta(days=n)).isoformat(),
                len(by_day.get(last - timedelta(days=n), [])),
                len({click.visitor for click in by_day.get(last - timedelta(days=n), [])}),
            )
            for n in range(days)
        ],
        "top_referrers": top("referrer"),
        "top_countries": top("country"),
        "devices": dict(Counter(click.device for click in counted)),
    }


def made_up(now: datetime, seed: int) -> list[Made]:
    """Clicks over the 100 days before ``now``: a few visitors coming back within the
    hour, the day and the month, bursts around midnights of several zones, bots."""
    rng = random.Random(seed)
    visitors = [f"{n:032x}" for n in range(1, 40)]
    referrers = ["(direct)", "(qr)", *(f"site{n}.example" for n in range(14))]
    countries = ["US", "GB", "JP", "NP", "AU", "XX", "DE", "BR", "IN", "CA", "FR", "NZ"]
    clicks = []
    for _ in range(900):
        at = now - timedelta(seconds=rng.randrange(100 * 86400))
        if rng.random() < 0.3:  # near a whole quarter hour: where days begin
            at = at.replace(minute=rng.choice((0, 14, 15, 29, 30, 44, 45, 59)), second=59)
        clicks.append(
            Made(
                min(at, now),
                rng.choice(visitors[: rng.choice((3, 10, 39))]),
                rng.choice(referrers),
                rng.choice(countries),
                rng.choice(("mobile", "desktop", "tablet")),
                rng.random() < 0.15,
            )
        )
    return clicks


def counted(answer: ClickAnalytics) -> dict[str, Any]:
    """``answer`` in :func:`expected`'s terms."""
    devices = answer.devices
    return {
        "total_clicks": answer.total_clicks,
        "unique_visitors": answer.unique_visitors,
        "clicks_by_day": [(day.date, day.clicks, day.unique) for day in answer.clicks_by_day],
        "top_referrers": [(each.referrer, each.clicks) for each in answer.top_referrers],
        "top_countries": [(each.country, each.clicks) for each in answer.top_countries],
        "devices": {
            device: n
            for device, n in (
                ("mobile", devices.mobile),
                ("desktop", devices.desktop),
                ("tablet", devices.tablet),
            )
            if n
        },
    }


ZONES = [
    "UTC",
    TOKYO,
    "Asia/Kathmandu",  # +05:45
    "Asia/Kolkata",  # +05:30
    "America/New_York",  # DST: days of 23 and 25 hours
    "America/St_Johns",  # -03:30 with DST
    "Australia/Lord_Howe",  # +10:30, and +11 in summer: a 30-minute change
    "Pacific/Chatham",  # +12:45 / +13:45
    "Pacific/Kiritimati",  # +14
    "Pacific/Pago_Pago",  # -11
]


@pytest.mark.parametrize(
    "now",
    [utc("2026-11-10T12:07:00"), utc("2026-04-07T23:50:00")],
    ids=["after-november-changes", "after-march-and-april-changes"],
)
async def test_the_answer_is_the_clicks_counted_one_by_one(
    product_client: ProductClientFactory, now: datetime
) -> None:
    async with open_clicks(product_client) as link:
        public_id, key = await link.link()
        created = now - timedelta(days=95, hours=5)
        async with link.gateway.database.transaction() as session:
            await session.execute(update(Link).where(Link.id == key).values(created_at=created))
        clicks = made_up(now, seed=int(now.timestamp()))
        rows = [click.row(key, link.owner.account_id) for click in clicks]
        random.Random(7).shuffle(rows)  # out of order: batches arrive late, and twice
        for n in range(0, len(rows), 97):
            assert await store(link.gateway.database, rows[n : n + 97]) == len(rows[n : n + 97])
        assert await store(link.gateway.database, rows[100:300]) == 0

        reader = Analytics(
            link.gateway.database.reads, link.owner.account_id, "", link.gateway.geoip
        )
        for name in ZONES:
            tz = ZoneInfo(name)
            today = now.astimezone(tz).date()
            firsts: dict[Period, date] = {
                "7d": today - timedelta(days=6),
                "30d": today - timedelta(days=29),
                "90d": today - timedelta(days=89),
                "all": created.astimezone(tz).date(),
            }
            for (period, first), include_bots in product(firsts.items(), (False, True)):
                answer = await reader.of(public_id, period, tz, include_bots, now)
                assert counted(answer) == expected(clicks, tz, first, today, include_bots), (
                    name,
                    period,
                    include_bots,
                )


async def test_days_of_23_and_25_hours_and_quarter_hour_zones(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client) as link:
        public_id, key = await link.link()
        one, two, three = "a" * 32, "b" * 32, "c" * 32
        made = [
            # New York, 1 November 2026: 25 hours, from 04:00 UTC to 05:00 UTC the next day.
            Made(utc("2026-11-01T04:10:00"), one, "(direct)", "US", "desktop", False),
            Made(utc("2026-11-02T04:40:00"), one, "(direct)", "US", "desktop", False),
            Made(utc("2026-11-02T05:10:00"), one, "(direct)", "US", "desktop", False),
            # 8 March 2026: 23 hours, from 05:00 UTC to 04:00 UTC the next day.
            Made(utc("2026-03-08T04:59:00"), two, "(direct)", "US", "desktop", False),
            Made(utc("2026-03-08T05:00:00"), two, "(direct)", "US", "desktop", False),
            Made(utc("2026-03-09T03:59:00"), two, "(direct)", "US", "desktop", False),
            Made(utc("2026-03-09T04:00:00"), one, "(direct)", "US", "desktop", False),
            # Kathmandu is 5:45 ahead: its 6 March begins at 18:15 UTC on the 5th.
            Made(utc("2026-03-05T18:14:00"), three, "(direct)", "NP", "mobile", False),
            Made(utc("2026-03-05T18:15:00"), three, "(direct)", "NP", "mobile", False),
        ]
        await store(
            link.gateway.database, [click.row(key, link.owner.account_id) for click in made]
        )
        reader = Analytics(
            link.gateway.database.reads, link.owner.account_id, "", link.gateway.geoip
        )
        new_york = ZoneInfo("America/New_York")
        november = await reader.of(public_id, "7d", new_york, False, utc("2026-11-03T12:00:00"))
        assert [(d.date, d.clicks, d.unique) for d in november.clicks_by_day[1:6]] == [
            ("2026-11-02", 1, 1),
            ("2026-11-01", 2, 1),
            ("2026-10-31", 0, 0),
            ("2026-10-30", 0, 0),
            ("2026-10-29", 0, 0),
        ]
        march = await reader.of(public_id, "7d", new_york, False, utc("2026-03-10T12:00:00"))
        assert [(d.date, d.clicks, d.unique) for d in march.clicks_by_day[:4]] == [
            ("2026-03-10", 0, 0),
            ("2026-03-09", 1, 1),
            ("2026-03-08", 2, 1),
            ("2026-03-07", 1, 1),
        ]
        assert (march.total_clicks, march.unique_visitors) == (6, 3)
        kathmandu = await reader.of(
            public_id, "7d", ZoneInfo("Asia/Kathmandu"), False, utc("2026-03-10T12:00:00")
        )
        assert [(d.date, d.clicks, d.unique) for d in kathmandu.clicks_by_day] == [
            ("2026-03-10", 0, 0),
            ("2026-03-09", 2, 2),
            ("2026-03-08", 2, 1),
            ("2026-03-07", 0, 0),
            ("2026-03-06", 1, 1),
            ("2026-03-05", 1, 1),
            ("2026-03-04", 0, 0),
        ]


async def test_a_visitor_seen_as_a_bot_first_counts_from_its_first_counted_click(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client) as link:
        public_id, key = await link.link()
        now = utc("2026-05-20T12:00:00")
        reader = Analytics(
            link.gateway.database.reads, link.owner.account_id, "", link.gateway.geoip
        )
        visitor = "d" * 32

        async def clicked(at: str, bot: bool) -> None:
            made = Made(utc(at), visitor, "(direct)", "US", "desktop", bot)
            await store(link.gateway.database, [made.row(key, link.owner.account_id)])

        async def numbers(include_bots: bool) -> tuple[int, int, list[tuple[int, int]]]:
            """Clicks and visitors of the week, and of its last three days."""
            answer = await reader.of(public_id, "7d", ZoneInfo("UTC"), include_bots, now)
            days = [(day.clicks, day.unique) for day in answer.clicks_by_day[:3]]
            return answer.total_clicks, answer.unique_visitors, days

        await clicked("2026-05-19T10:01:00", bot=True)  # a HEAD request first
        assert await numbers(False) == (0, 0, [(0, 0), (0, 0), (0, 0)])
        assert await numbers(True) == (1, 1, [(0, 0), (1, 1), (0, 0)])
        await clicked("2026-05-19T10:02:00", bot=False)  # then the page, same quarter hour
        assert await numbers(False) == (1, 1, [(0, 0), (1, 1), (0, 0)])
        assert await numbers(True) == (2, 1, [(0, 0), (2, 1), (0, 0)])
        await clicked("2026-05-18T10:03:00", bot=False)  # a late click from the day before
        await clicked("2026-05-19T10:04:00", bot=True)
        assert await numbers(False) == (2, 1, [(0, 0), (1, 1), (1, 1)])
        assert await numbers(True) == (4, 1, [(0, 0), (3, 1), (1, 1)])
