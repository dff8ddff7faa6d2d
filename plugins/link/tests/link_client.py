"""The short links product's test client (tollway's product client with the calls link
tests repeat) and the clicks its redirects queued."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import select

from tollway.testing import KeylessProductClient, ProductClientFactory
from tollway_link.capture import RawClick
from tollway_link.clicks import Clicks
from tollway_link.models import Link
from tollway_link.product import PRODUCT

LINK = PRODUCT.prefix


@dataclass(frozen=True)
class LinkClient(KeylessProductClient):
    """A gateway serving short links in-process; accounts ``owner`` (acme) and
    ``other`` (globex) with keys holding every link scope. ``clicks`` are the clicks
    its redirects handed to the gateway's :class:`Clicks` queue, in order."""

    clicks: list[RawClick] = field(default_factory=list)

    async def call(self, method: str, path: str, *, expect: int = 200, **request: Any) -> Any:
        return await self.product_client.call(method, path, expect=expect, **request)

    async def create(self, destination: str = "https://example.com/", **fields: Any) -> Any:
        body = {"destination_url": destination, **fields}
        return await self.call("POST", "/links", json=body, expect=201)

    async def follow(self, path: str, **request: Any) -> httpx.Response:
        """A visitor (no key) following ``path`` (``/l/<code>``), redirects not followed."""
        return await self.client.get(path, follow_redirects=False, **request)

    async def key(self, link_id: str) -> int:
        """The integer key of the link whose API id is ``link_id`` (what clicks carry)."""
        async with self.gateway.database.transaction() as session:
            key: int = await session.scalar(select(Link.id).where(Link.public_id == link_id))
            return key


@asynccontextmanager
async def open_link(
    product_client: ProductClientFactory,
    *,
    settings: Mapping[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[LinkClient]:
    """``product_client("link", settings=..., **options)`` as a :class:`LinkClient`."""
    async with product_client(PRODUCT.name, settings=settings, **options) as opened:
        link = LinkClient(opened)
        queue = opened.gateway.service(Clicks)
        queue_add = queue.add

        def add(click: RawClick) -> None:
            link.clicks.append(click)
            queue_add(click)

        queue.add = add  # type: ignore[method-assign]
        yield link
