"""The ``removebg.usage`` report: credits charged and images processed, by the caller's
day, week or month, seeded through the API at instants set on the service's clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from conftest import ImageServer, Page
from PIL import Image
from removebg_setup import API, Setup, b64, picture

from tollway import Gateway, Granularity, Period, hookimpl
from tollway.testing import GatewayFactory, open_product_client
from tollway_analytics.testing import analytics_key, assert_agrees, read_three_ways
from tollway_removebg.product import SCOPES
from tollway_removebg.service import RemoveBg

NEW_YORK = ZoneInfo("America/New_York")  # clocks go forward on 2026-03-08
UTC_ZONE = ZoneInfo("UTC")


class Opaque:
    """A segmenter keeping every pixel: the report counts images, not their looks, and
    needs no model."""

    name = "opaque"

    def cut_out(self, image: Image.Image) -> Image.Image:
        return image.convert("RGBA")

    def warm_up(self) -> None:
        pass


class OpaquePlugin:
    @hookimpl
    def tollway_segmenter(self, gateway: Gateway) -> Opaque:
        return Opaque()


@asynccontextmanager
async def opaque_setup(
    factory: GatewayFactory, plugins: tuple[str, ...] = ("removebg",)
) -> AsyncIterator[Setup]:
    gateway = await factory(
        plugins=list(plugins),
        extra_plugins=[("opaque", OpaquePlugin())],
        products={"removebg": {"settings": {"allow_private_urls": True}}},
    )
    async with open_product_client(gateway, "removebg", scopes=SCOPES) as product:
        yield Setup(product)


def utc(day: int, hour: int, minute: int = 0, month: int = 3) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


async def _process(setup: Setup, at: datetime, *, expect: int = 200, **body: Any) -> None:
    setup.gateway.service(RemoveBg).clock = lambda: at
    await setup.process(expect=expect, **{"image_base64": b64(picture((64, 48))), **body})


async def _batch(setup: Setup, at: datetime, urls: list[str]) -> dict[str, Any]:
    setup.gateway.service(RemoveBg).clock = lambda: at
    submitted = await setup.post("/batch", {"images": [{"url": url} for url in urls]}, expect=202)
    while True:
        job: dict[str, Any] = await setup.get(f"/batch/{submitted['job_id']}")
        if job["status"] != "processing":
            return job
        await asyncio.sleep(0.05)


async def _report(
    gateway: Gateway,
    account_id: int,
    start: date,
    end: date,
    granularity: Granularity = "day",
    zone: ZoneInfo = NEW_YORK,
) -> tuple[dict[str, Any], list[tuple[str, int, int]]]:
    report = gateway.registry.reports["removebg.usage"]
    data = await report.compute(gateway, Period(account_id, start, end, granularity, zone))
    series = [
        (point["date"].isoformat(), point["credits"], point["images"]) for point in data.series
    ]
    return data.summary, series


async def test_usage_counts_charged_images_by_the_callers_days(
    gateway_factory: GatewayFactory, image_server: ImageServer
) -> None:
    image_server.pages["/a.png"] = Page(body=picture((64, 48)))
    async with opaque_setup(gateway_factory) as setup:
        await _process(setup, utc(2, 4, 30))  # New York's March 1st, 23:30
        await _process(setup, utc(2, 5), return_base64=True)  # March 2nd, 00:00
        await _process(setup, utc(4, 15))
        await _process(setup, utc(4, 15, 10))  # the same 15 minutes
        await _process(setup, utc(4, 16), expect=422, image_base64=b64(b"not an image"))
        await _process(setup, utc(9, 3, 59))  # March 8th, 23:59 (EDT)
        await _process(setup, utc(9, 4))  # March 9th, 00:00
        job = await _batch(
            setup, utc(10, 12), [image_server.url("/a.png"), image_server.url("/gone.png")]
        )
        await _process(setup, utc(13, 4))  # March 13th, 00:00: after the range
        other = setup.other.headers
        answer = await setup.client.post(
            API + "/process", json={"image_base64": b64(picture((64, 48)))}, headers=other
        )
        quota = await setup.get("/quota")
        gateway, owner = setup.gateway, setup.owner.account_id
        days = await _report(gateway, owner, date(2026, 3, 2), date(2026, 3, 12))
        weeks = await _report(gateway, owner, date(2026, 3, 4), date(2026, 3, 12), "week")
        months = await _report(gateway, owner, date(2026, 2, 20), date(2026, 3, 12), "month")
        in_utc = await _report(gateway, owner, date(2026, 3, 1), date(2026, 3, 2), zone=UTC_ZONE)
        others = await _report(
            gateway, setup.other.account_id, date(2026, 3, 1), date(2026, 3, 31), "month"
        )
    assert (job["completed"], job["failed"], job["credits_used"]) == (1, 1, 1)
    assert answer.status_code == 200
    # The failed image and batch item were given their credits back: 8 charged in March.
    assert quota["credits_used"] == 8
    assert days == (
        {"credits": 6, "images": 6},
        [
            ("2026-03-02", 1, 1),
            ("2026-03-03", 0, 0),
            ("2026-03-04", 2, 2),
            *((f"2026-03-0{day}", 0, 0) for day in (5, 6, 7)),
            ("2026-03-08", 1, 1),
            ("2026-03-09", 1, 1),
            ("2026-03-10", 1, 1),
            ("2026-03-11", 0, 0),
            ("2026-03-12", 0, 0),
        ],
    )
    # A week is dated its Monday, even before the range, and counts the range's days.
    assert weeks == ({"credits": 5, "images": 5}, [("2026-03-02", 3, 3), ("2026-03-09", 2, 2)])
    assert months == ({"credits": 7, "images": 7}, [("2026-02-01", 0, 0), ("2026-03-01", 7, 7)])
    assert in_utc == ({"credits": 2, "images": 2}, [("2026-03-01", 0, 0), ("2026-03-02", 2, 2)])
    assert others == ({"credits": 1, "images": 1}, [("2026-03-01", 1, 1)])


async def test_the_analytics_api_gives_the_same_usage_as_json_csv_and_pdf(
    gateway_factory: GatewayFactory,
) -> None:
    async with opaque_setup(gateway_factory, ("removebg", "analytics")) as setup:
        await _process(setup, utc(2, 10))
        await _process(setup, utc(2, 11))
        await _process(setup, utc(4, 9))
        gateway, owner = setup.gateway, setup.owner.account_id
        described = gateway.registry.reports["removebg.usage"]
        data = await described.compute(
            gateway, Period(owner, date(2026, 3, 1), date(2026, 3, 5), "day", UTC_ZONE)
        )
        headers = await analytics_key(gateway, owner)
        params = {"start_date": "2026-03-01", "end_date": "2026-03-05", "tz": "UTC"}
        read = await read_three_ways(setup.client, headers, "removebg.usage", params)
    assert data.summary == {"credits": 3, "images": 3}
    assert [point["credits"] for point in data.series] == [0, 2, 0, 1, 0]
    assert_agrees(read, described, data)
