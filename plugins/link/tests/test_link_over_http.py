"""A click over real HTTP, end to end: a served gateway (``tollway serve`` in a process of
its own) answers the redirect of a visitor behind a trusted proxy, stores the click off
the request path, and its analytics show the visitor's referrer, country, device and
day in the caller's time zone, with the bot and the ``HEAD`` left out."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
from clicks_client import unique_stream

from tollway.testing import Backend, GatewayFactory, GatewayProcess, deployment_settings, tenant
from tollway_link.product import ANALYTICS_READ, LINKS_READ, LINKS_WRITE

TOKYO = ZoneInfo("Asia/Tokyo")
JAPAN = "133.11.0.1"  # The University of Tokyo
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
STORED_WITHIN = 30.0
"""Seconds the served gateway gets to store three clicks (it takes a fraction of one)."""


async def _analytics(client: httpx.AsyncClient, link_id: str, **query: str) -> Any:
    answer = await client.get(f"/v1/link/analytics/{link_id}", params=query)
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_a_visitors_click_shows_up_in_the_callers_days(
    backend: Backend, gateway_factory: GatewayFactory, tmp_path: Path
) -> None:
    gateway = await gateway_factory(plugins=["link"], isolated=True)
    owner = await tenant(
        gateway, "acme", plans={"link": "pro"}, scopes=[LINKS_READ, LINKS_WRITE, ANALYTICS_READ]
    )
    config = tmp_path / "link.toml"
    config.write_text(
        '[gateway]\ntrusted_proxies = ["127.0.0.1"]\n'
        f'[products.link.settings]\nclick_stream = "{unique_stream()}"\n'
        "click_flush_interval = 0.05\n"
    )
    settings = {**deployment_settings(gateway), "config": config}
    with GatewayProcess(plugins=["link"], **settings) as server:
        async with httpx.AsyncClient(base_url=server.url, headers=owner.headers) as client:
            created = await client.post(
                "/v1/link/links", json={"destination_url": "https://example.com/tokyo"}
            )
            assert created.status_code == 201, created.text
            link_id, code = created.json()["id"], created.json()["code"]

            started = datetime.now(UTC)
            # The visitor, through our proxy (127.0.0.1, trusted), from an iPhone in Japan.
            visit = {
                "User-Agent": IPHONE,
                "Referer": "https://m.facebook.com/story.php?id=1",
                "X-Forwarded-For": JAPAN,
            }
            async with httpx.AsyncClient(base_url=server.url) as visitor:
                followed = await visitor.get(f"/l/{code}", headers=visit)
                assert followed.status_code == 302
                assert followed.headers["location"] == "https://example.com/tokyo"
                assert followed.headers["cache-control"] == "no-store"
                assert (await visitor.head(f"/l/{code}", headers=visit)).status_code == 302
                crawled = await visitor.get(f"/l/{code}", headers={"User-Agent": GOOGLEBOT})
                assert crawled.status_code == 302
            finished = datetime.now(UTC)

            deadline = time.monotonic() + STORED_WITHIN
            while (await _analytics(client, link_id, include_bots="true"))["total_clicks"] < 3:
                assert time.monotonic() < deadline, "the clicks were not stored"
                await asyncio.sleep(0.05)

            answer = await _analytics(client, link_id, tz="Asia/Tokyo", period="7d")
            assert answer["total_clicks"] == answer["unique_visitors"] == 1
            assert answer["top_referrers"] == [{"referrer": "facebook.com", "clicks": 1}]
            assert answer["top_countries"] == [
                {"country": "JP", "country_name": "Japan", "clicks": 1}
            ]
            assert answer["devices"] == {"mobile": 1, "desktop": 0, "tablet": 0}
            # The click is on the visitor's day in Tokyo (the request took a moment:
            # if Tokyo's midnight fell inside it, either side of it is right).
            days = {started.astimezone(TOKYO).date(), finished.astimezone(TOKYO).date()}
            [clicked] = [row for row in answer["clicks_by_day"] if row["clicks"]]
            assert datetime.fromisoformat(clicked["date"]).date() in days
            assert clicked == {"date": clicked["date"], "clicks": 1, "unique": 1}
            assert answer["clicks_by_day"][0]["date"] == max(days).isoformat()
            assert (await client.get(f"/v1/link/links/{link_id}")).json()["clicks"] == 1
