"""The live order and stock streams: the document now, then every committed change;
the customer's realtime token for their own orders only; and a change made through
one gateway process reaching a stream held by another (PostgreSQL and Redis)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from pos_client import POS, customer, order, pos_client, product, signed_in

from tollway import Gateway
from tollway.testing import (
    Backend,
    GatewayFactory,
    GatewayProcess,
    ProductClient,
    ProductClientFactory,
    deployment_settings,
    tenant,
)
from tollway_pos.live import OrderVersions, StockVersions, inventory_topic, order_topic
from tollway_pos.product import PRODUCT

WAIT = 10.0
"""Seconds a test waits for what must happen at once; only a failure waits this long."""


def sse_events(body: str) -> list[dict[str, Any]]:
    """The events of a stream's ``body``: ``event`` and ``data`` decoded from JSON."""
    events = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if line and not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = fields.get(name, "") + value.removeprefix(" ")
        if fields:
            events.append({"event": fields.get("event"), "data": json.loads(fields["data"])})
    return events


def _subscriptions(gateway: Gateway) -> asyncio.Queue[str]:
    """The topics the gateway's bus subscribes to from now on, as each subscription
    takes effect."""
    bus, topics = gateway.live, asyncio.Queue[str]()
    subscribe = bus.subscribe

    async def subscribed(topic: str) -> asyncio.Queue[bytes]:
        queue = await subscribe(topic)
        topics.put_nowait(topic)
        return queue

    bus.subscribe = subscribed  # type: ignore[method-assign]
    return topics


async def _streamed_while(
    pos: ProductClient,
    path: str,
    topic: str,
    change: Callable[[], Awaitable[Any]],
    *,
    events: int,
    params: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The first ``events`` events of the stream ``path``, read as the app sends them
    (straight from the ASGI app, as a browser reads them: httpx's in-process transport
    would wait for the stream's end), ``change`` made once the first has arrived; then
    the client goes away."""
    app = pos.client._transport.app  # type: ignore[attr-defined]
    sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    gone = asyncio.Event()
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.put_nowait(message)

    sent_headers = {**pos.owner.headers, **(headers or {})} if params is None else headers or {}
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": POS + path,
        "raw_path": (POS + path).encode(),
        "query_string": urlencode(params or {}).encode(),
        "root_path": "",
        "headers": [(b"host", b"testserver")]
        + [(name.lower().encode(), value.encode()) for name, value in sent_headers.items()],
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }
    subscriptions = _subscriptions(pos.gateway)
    serving = asyncio.create_task(app(scope, receive, send))
    try:
        start = await asyncio.wait_for(sent.get(), WAIT)
        assert start["status"] == 200
        content_type = dict(start["headers"])[b"content-type"]
        assert content_type.startswith(b"text/event-stream")
        assert subscriptions.get_nowait() == topic  # subscribed before the first event
        body = ""

        async def until(count: int) -> list[dict[str, Any]]:
            nonlocal body
            while len(found := sse_events(body)) < count:
                body += (await asyncio.wait_for(sent.get(), WAIT))["body"].decode()
            return found

        # The change follows the document as the client got it; made any sooner, the
        # document read once subscribed may already show it, and then it is not sent
        # again (only newer versions are).
        await until(1)
        await change()
        return await until(events)
    finally:
        gone.set()
        await asyncio.wait_for(serving, WAIT)


async def test_an_order_stream_sends_the_order_then_each_change(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client, settings={"stream_max_seconds": 60}) as pos:
        burger = await product(pos, stock_qty=10)
        placed = await order(pos, [{"product_id": burger["id"], "qty": 1}])
        path = f"/orders/{placed['id']}"

        async def confirm() -> None:
            await pos.call("PATCH", path, json={"status": "confirmed"})

        topic = order_topic(pos.owner.account_id, placed["id"])
        events = await _streamed_while(pos, f"/live{path}", topic, confirm, events=2)
        assert [(e["event"], e["data"]["status"]) for e in events] == [
            ("order", "pending"),
            ("order", "confirmed"),
        ]
        assert events[1]["data"] == (await pos.call("GET", path))["order"]
        other = await pos.client.get(f"{POS}/live{path}", headers=pos.other.headers)
        assert other.status_code == 404


async def test_the_inventory_stream_sends_the_stock_then_each_changed_item(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client, settings={"stream_max_seconds": 60}) as pos:
        burger = await product(pos, stock_qty=10)
        await product(pos, "Fries", stock_qty=4)
        await product(pos, "Water")  # not tracked: not in the inventory

        async def sell() -> None:
            await order(pos, [{"product_id": burger["id"], "qty": 3}])

        topic = inventory_topic(pos.owner.account_id)
        events = await _streamed_while(pos, "/live/inventory", topic, sell, events=2)
        assert [e["event"] for e in events] == ["inventory", "stock"]
        first = {item["product_name"]: item["qty"] for item in events[0]["data"]["inventory"]}
        assert first == {"Cheeseburger": 10, "Fries": 4}
        assert (events[1]["data"]["product_id"], events[1]["data"]["qty"]) == (burger["id"], 7)


async def test_the_realtime_token_follows_the_customers_own_orders_only(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client, settings={"stream_max_seconds": 60}) as pos:
        burger = await product(pos, stock_qty=10)
        ada, bob = await customer(pos, "ada@example.com"), await customer(pos, "bob@example.com")
        mine = await order(pos, [{"product_id": burger["id"], "qty": 1}], headers=signed_in(ada))
        theirs = await order(pos, [{"product_id": burger["id"], "qty": 1}], headers=signed_in(bob))
        token = {"token": ada["realtime_token"]}

        async def prepare() -> None:
            await pos.call("PATCH", f"/orders/{mine['id']}", json={"status": "confirmed"})

        topic = order_topic(pos.owner.account_id, mine["id"])
        path = f"/realtime/orders/{mine['id']}"
        events = await _streamed_while(pos, path, topic, prepare, events=2, params=token)
        assert [e["data"]["status"] for e in events] == ["pending", "confirmed"]
        refused = {
            "another's order": (f"/realtime/orders/{theirs['id']}", token, 404),
            "the customer token": (path, {"token": ada["token"]}, 401),
            "no token": (path, {}, 400),
            "a forged token": (path, {"token": ada["realtime_token"][:-2] + "xx"}, 401),
        }
        for what, (url, params, status) in refused.items():
            response = await pos.client.get(POS + url, params=params)
            assert response.status_code == status, (what, response.text)

        async def nothing() -> None:
            pass

        stock = await _streamed_while(
            pos,
            "/realtime/inventory",
            inventory_topic(pos.owner.account_id),
            nothing,
            events=1,
            params=token,
        )
        assert stock[0]["event"] == "inventory"


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    fields: dict[str, str] = {}
    async for line in lines:
        if line:
            if not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
        elif fields:
            yield {"event": fields.get("event"), "data": json.loads(fields["data"])}
            fields = {}


async def test_a_change_on_one_process_reaches_a_stream_on_another(
    backend: Backend, gateway_factory: GatewayFactory
) -> None:
    if backend.redis_url is None:
        pytest.skip("several processes need the scale-out profile (PostgreSQL and Redis)")
    gateway = await gateway_factory(plugins=["pos"], isolated=True)
    scopes = [scope for scope in gateway.registry.scopes if scope.startswith("pos:")]
    owner = await tenant(gateway, "acme", plans={PRODUCT.name: "business"}, scopes=scopes)
    settings = deployment_settings(gateway)
    with (
        GatewayProcess(plugins=["pos"], **settings) as first,
        GatewayProcess(plugins=["pos"], **settings) as second,
    ):
        async with httpx.AsyncClient(timeout=WAIT, headers=owner.headers) as client:
            created = await client.post(
                f"{first.url}{POS}/products",
                json={"name": "Tea", "price_cents": 300, "stock_qty": 9},
            )
            assert created.status_code == 201, created.text
            tea = created.json()
            placed = await client.post(
                f"{first.url}{POS}/orders",
                json={"order_type": "takeaway", "items": [{"product_id": tea["id"], "qty": 2}]},
            )
            assert placed.status_code == 201, placed.text
            order_id = placed.json()["order"]["id"]
            async with client.stream("GET", f"{second.url}{POS}/live/orders/{order_id}") as stream:
                assert stream.status_code == 200
                events = _events(stream.aiter_lines())
                now = await asyncio.wait_for(anext(events), WAIT)
                assert (now["event"], now["data"]["status"]) == ("order", "pending")
                moved = await client.patch(
                    f"{first.url}{POS}/orders/{order_id}", json={"status": "cancelled"}
                )
                assert moved.status_code == 200, moved.text
                later = await asyncio.wait_for(anext(events), WAIT)
                assert (later["event"], later["data"]["status"]) == ("order", "cancelled")
                assert later["data"]["cancelled_at"] == moved.json()["order"]["cancelled_at"]
            async with client.stream("GET", f"{second.url}{POS}/live/inventory") as stream:
                events = _events(stream.aiter_lines())
                now = await asyncio.wait_for(anext(events), WAIT)
                assert now["data"]["inventory"][0]["qty"] == 9  # the cancellation gave 2 back
                adjusted = await client.post(
                    f"{first.url}{POS}/inventory/{tea['id']}/adjustments", json={"set": 5}
                )
                assert adjusted.status_code == 200, adjusted.text
                later = await asyncio.wait_for(anext(events), WAIT)
                assert (later["event"], later["data"]["qty"]) == ("stock", 5)


def test_a_stream_sends_only_versions_newer_than_it_sent() -> None:
    """Publishes of two transactions may arrive in either order: a late, older version
    (or the one a stream read first, published again) is never sent after a newer."""
    item = {"product_id": "prod_A", "product_name": "Tea", "qty": 4}
    other = {**item, "product_id": "prod_B"}

    def payload(version: int, document: dict[str, Any]) -> bytes:
        return b"%d\n%s" % (version, json.dumps(document).encode())

    orders = OrderVersions(sent=2)
    assert orders.frame(payload(2, {"status": "confirmed"})) is None
    newer = orders.frame(payload(4, {"status": "ready"}))
    assert newer is not None
    assert json.loads(newer.data) == {"status": "ready"}
    assert orders.frame(payload(3, {"status": "preparing"})) is None
    stock = StockVersions(sent={"prod_A": 5})
    assert stock.frame(payload(5, item)) is None
    assert stock.frame(payload(1, other)) is not None  # each item has versions of its own
    sent = stock.frame(payload(6, {**item, "qty": 3}))
    assert sent is not None
    assert sent.event == "stock"
    assert json.loads(sent.data)["qty"] == 3
    assert stock.frame(payload(6, item)) is None
