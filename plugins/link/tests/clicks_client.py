"""What the click tests share: a gateway serving short links with its click queue at
work (each on a Redis stream of its own), links made through the API, clicks made up
as redirects record them, and what the database holds of them."""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from tollway.testing import REDIS_URL, KeylessProductClient, ProductClientFactory, redis_unreachable
from tollway.testing import unavailable as backend_unavailable
from tollway_link.capture import RawClick
from tollway_link.clicks import Clicks
from tollway_link.models import Click, Link
from tollway_link.product import PRODUCT

BROWSER = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0 Safari/537.36"
)
PHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)
CRAWLER = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def unique_stream() -> str:
    return f"tollway-test:{secrets.token_hex(6)}:link:clicks"


@dataclass(frozen=True)
class ClicksClient(KeylessProductClient):
    """A gateway serving short links in-process, its :class:`Clicks` queue running."""

    @property
    def clicks(self) -> Clicks:
        return self.gateway.service(Clicks)

    async def link(self, code: str | None = None) -> tuple[str, int]:
        """A new link of the owner's: its public id and its key."""
        body: dict[str, Any] = {"destination_url": "https://example.com/"}
        if code is not None:
            body["code"] = code
        created = await self.product_client.call("POST", "/links", json=body, expect=201)
        async with self.gateway.database.transaction() as session:
            key = await session.scalar(select(Link.id).where(Link.public_id == created["id"]))
        assert key is not None
        return created["id"], key

    def click(self, link: int, **fields: Any) -> RawClick:
        """A click on ``link`` as the redirect records it: now, by a desktop browser
        from a public address, no referrer, unless ``fields`` say otherwise."""
        values: dict[str, Any] = {
            "id": uuid.uuid4().hex,
            "link_id": link,
            "account_id": self.owner.account_id,
            "at": time.time(),
            "address": "8.8.8.8",
            "user_agent": BROWSER,
            "referer": "",
            "qr": False,
            "head": False,
        } | fields
        return RawClick(**values)

    async def stored(self, link: int) -> tuple[int, int]:
        """``(clicks stored, the link's counted clicks)``."""
        async with self.gateway.database.transaction() as session:
            rows = await session.scalar(select(func.count()).where(Click.link_id == link))
            counted = await session.scalar(select(Link.clicks).where(Link.id == link))
        return int(rows or 0), int(counted or 0)

    async def bots(self, link: int) -> list[bool]:
        async with self.gateway.database.transaction() as session:
            found = await session.scalars(
                select(Click.bot).where(Click.link_id == link).order_by(Click.bot)
            )
            return list(found)


@asynccontextmanager
async def open_clicks(
    product_client: ProductClientFactory,
    *,
    redis: bool = False,
    settings: Mapping[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[ClicksClient]:
    """``product_client("link")`` on a click stream of its own, in the embedded
    profile or with ``redis`` the scale-out one (a Redis stream), on either database."""
    if redis and (problem := await redis_unreachable(REDIS_URL)):
        backend_unavailable(f"Redis at {REDIS_URL} unreachable: {problem}")
    options["redis_url"] = REDIS_URL if redis else None
    merged = {"click_stream": unique_stream(), **(settings or {})}
    async with product_client(PRODUCT.name, settings=merged, **options) as opened:
        yield ClicksClient(opened)
