"""Live documents of a store on the gateway's real-time bus (``gateway.live``): an order
(``orders/{order_id}``) and the store's ``inventory`` collection.

A change is published once the transaction making it commits (never a change that
rolled back), to every stream open on any gateway process: the bus is Redis
publish/subscribe in the scale-out profile. A stream sends the document as it is now
first, then every later version: each is the whole document (an order) or the whole
item (a stock line), so a reconnecting client misses nothing it needs.

Publishes of two transactions can arrive in either order (each goes out on its own
after its commit), so every version carries the row's ``version``, which each change
counts up under the row's lock: a stream sends a version only when it is newer than
the last one it sent of that order or item, and a late, older one never overwrites a
newer one on a client's screen.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import Gateway, LiveBus, LiveEvent, after_commit
from tollway_pos import schemas

log = logging.getLogger("tollway.pos.live")

ORDER_EVENT = "order"
INVENTORY_EVENT = "inventory"
STOCK_EVENT = "stock"


def order_topic(account_id: int, order_id: str) -> str:
    return f"pos:{account_id}:orders/{order_id}"


def inventory_topic(account_id: int) -> str:
    return f"pos:{account_id}:inventory"


def versioned(version: int, document: msgspec.Struct) -> bytes:
    """A published payload: the version, a line break, the document's JSON."""
    return b"%d\n%s" % (version, msgspec.json.encode(document))


def _unpacked(payload: bytes) -> tuple[int, bytes]:
    version, _, document = payload.partition(b"\n")
    return int(version), document


class _Item(msgspec.Struct):
    product_id: str


class OrderVersions:
    """The frames of one order's stream: newer versions only, from ``sent`` on."""

    def __init__(self, sent: int) -> None:
        self.sent = sent

    def frame(self, payload: bytes) -> LiveEvent | None:
        version, document = _unpacked(payload)
        if version <= self.sent:
            return None
        self.sent = version
        return LiveEvent(document, event=ORDER_EVENT)


class StockVersions:
    """The frames of an inventory stream: each item's newer versions only, ``sent``
    holding the versions of the items sent first."""

    def __init__(self, sent: dict[str, int]) -> None:
        self.sent = sent

    def frame(self, payload: bytes) -> LiveEvent | None:
        version, document = _unpacked(payload)
        item = msgspec.json.decode(document, type=_Item).product_id
        if version <= self.sent.get(item, 0):
            return None
        self.sent[item] = version
        return LiveEvent(document, event=STOCK_EVENT)


class Live:
    """Publishes the store's changed documents after commit (a service: one per
    gateway, on its bus)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._sending: set[asyncio.Task[None]] = set()

    @property
    def bus(self) -> LiveBus:
        return self.gateway.live

    def order_changed(
        self, session: AsyncSession, account_id: int, order: schemas.Order, version: int
    ) -> None:
        self._after(session, order_topic(account_id, order.id), versioned(version, order))

    def stock_changed(
        self, session: AsyncSession, account_id: int, item: schemas.InventoryItem, version: int
    ) -> None:
        self._after(session, inventory_topic(account_id), versioned(version, item))

    def _after(self, session: AsyncSession, topic: str, payload: bytes) -> None:
        after_commit(session, partial(self._publish, topic, payload))

    def _publish(self, topic: str, payload: bytes) -> None:
        task = asyncio.get_running_loop().create_task(self._send(topic, payload))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, topic: str, payload: bytes) -> None:
        try:
            await self.bus.publish(topic, payload)
        except Exception as error:  # a lost live update: the next version carries it all
            log.warning("could not publish to %s: %s", topic, error)

    async def stop(self) -> None:
        """Let the updates under way go out."""
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)
