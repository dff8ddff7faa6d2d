"""The live streams (spec 5.4, 6): an order and the store's inventory as Server-Sent
Events, through the gateway, never from a store a client reaches directly.

The store follows them with its API key (``/live/...``); a customer's app with the
realtime token from register or login (``/realtime/...?token=``, since a browser's
``EventSource`` sends no headers), and only the customer's own orders. Every stream
subscribes before it reads the document, then sends it: a change made in between is
sent after it, never lost. Streams end after ``stream_max_seconds``; clients reconnect.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import get
from litestar.di import NamedDependency
from litestar.params import PathParameter, QueryParameter
from litestar.response import Stream

from tollway import CurrentGateway, Gateway, LiveEvent, Reads, live_stream
from tollway_pos import schemas
from tollway_pos.live import (
    INVENTORY_EVENT,
    ORDER_EVENT,
    OrderVersions,
    StockVersions,
    inventory_topic,
    order_topic,
)
from tollway_pos.product import INVENTORY_READ, LIVE_AUDIENCE, ORDERS_READ
from tollway_pos.queries import PosReads, order_not_found
from tollway_pos.settings import PosSettings

OrderId = Annotated[
    str, PathParameter(pattern="^ord_[0-9A-Za-z]{16}$", description="The order's id.")
]
RealtimeToken = Annotated[
    str,
    QueryParameter(min_length=1, max_length=4096, description="The customer's realtime token."),
]


async def _follow_order(gateway: Gateway, pos_reads: PosReads, order_id: str) -> Stream:
    """The order's stream: the order now, then its newer versions; a 404 before the
    stream starts for an unknown order."""
    versions = OrderVersions(0)

    async def first() -> list[LiveEvent]:
        order, versions.sent = await pos_reads.live_order(order_id)
        return [LiveEvent(msgspec.json.encode(order), event=ORDER_EVENT)]

    return await live_stream(
        gateway.live,
        order_topic(pos_reads.account_id, order_id),
        versions.frame,
        first=first,
        max_seconds=gateway.product_settings(PosSettings).stream_max_seconds,
    )


async def _follow_inventory(gateway: Gateway, pos_reads: PosReads) -> Stream:
    """The inventory's stream: every tracked item now, then each item's newer versions."""
    versions = StockVersions({})

    async def first() -> list[LiveEvent]:
        items, versions.sent = await pos_reads.live_inventory()
        return [LiveEvent(msgspec.json.encode(schemas.Inventory(items)), event=INVENTORY_EVENT)]

    return await live_stream(
        gateway.live,
        inventory_topic(pos_reads.account_id),
        versions.frame,
        first=first,
        max_seconds=gateway.product_settings(PosSettings).stream_max_seconds,
    )


@get("/live/orders/{order_id:str}", scope=ORDERS_READ, media_type="text/event-stream")
async def follow_order(
    order_id: OrderId, pos_reads: NamedDependency[PosReads], gateway: CurrentGateway
) -> Stream:
    """The order now (``event: order``), then each new version of it; an unknown
    order is a 404 before the stream starts."""
    return await _follow_order(gateway, pos_reads, order_id)


@get("/live/inventory", scope=INVENTORY_READ, media_type="text/event-stream")
async def follow_inventory(pos_reads: NamedDependency[PosReads], gateway: CurrentGateway) -> Stream:
    """The inventory now (``event: inventory``), then each changed item (``event: stock``)."""
    return await _follow_inventory(gateway, pos_reads)


async def _customer_reads(
    token: str, reads: Reads, gateway: CurrentGateway
) -> tuple[PosReads, str]:
    tokens = await gateway.customer_tokens()
    customer = tokens.bearer(token, product=LIVE_AUDIENCE, name="token")
    return PosReads.of_store(reads, customer.account_id, gateway), customer.id


@get("/realtime/orders/{order_id:str}", public=True, media_type="text/event-stream")
async def follow_own_order(
    order_id: OrderId, token: RealtimeToken, reads: NamedDependency[Reads], gateway: CurrentGateway
) -> Stream:
    """As ``/live/orders/{order_id}``, for the token's customer's own orders only
    (another's is a 404, as an unknown one)."""
    pos_reads, customer_id = await _customer_reads(token, reads, gateway)
    if (await pos_reads.order(order_id)).customer_id != customer_id:
        raise order_not_found(order_id)
    return await _follow_order(gateway, pos_reads, order_id)


@get("/realtime/inventory", public=True, media_type="text/event-stream")
async def follow_stock(
    token: RealtimeToken, reads: NamedDependency[Reads], gateway: CurrentGateway
) -> Stream:
    """As ``/live/inventory``, for a signed-in customer's app."""
    pos_reads, _ = await _customer_reads(token, reads, gateway)
    return await _follow_inventory(gateway, pos_reads)


STREAM_ROUTES = [follow_order, follow_inventory, follow_own_order, follow_stock]
