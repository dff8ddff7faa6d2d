"""Orders racing for what only some of them can have, on PostgreSQL: fifty orders at
once for the last three units place exactly three (stock never below zero, three
``sale`` movements, order numbers 1 to 3), and twenty orders at once with a single-use
coupon let exactly one use it. The requests run concurrently through the app, and each
test checks that their transactions really overlapped.

SQLite lets one transaction write at a time (a lock on the whole database): rows are
never contended there, so these tests are PostgreSQL's only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from pos_client import POS, pos_client, product, stock_movements

from tollway.testing import Backend, ProductClient, ProductClientFactory
from tollway_pos.orders import Orders


@contextmanager
def overlap(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """``[most]``: the most orders in their transactions at once while the block runs,
    each on a connection of its own (a transaction commits after ``Orders.place``
    returns)."""
    most, inside = [0], [0]
    place = Orders.place

    async def counted(self: Orders, *arguments: Any) -> Any:
        await self.session.connection()  # begins the transaction now, not at its first query
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        try:
            return await place(self, *arguments)
        finally:
            inside[0] -= 1

    with monkeypatch.context() as patched:
        patched.setattr(Orders, "place", counted)
        yield most


async def at_once(pos: ProductClient, count: int, body: dict[str, Any]) -> list[httpx.Response]:
    """``count`` identical ``POST /orders`` sent together."""
    return await asyncio.gather(
        *(pos.client.post(f"{POS}/orders", json=body) for _ in range(count))
    )


def postgresql_only(backend: Backend) -> None:
    """Skip on SQLite (the PostgreSQL run never skips under ``CI=true``: its backend
    fails there when unavailable)."""
    if backend.name != "postgresql":
        pytest.skip("SQLite lets one transaction write at a time: no row is contended")


async def test_fifty_orders_for_the_last_three_units(
    product_client: ProductClientFactory, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    postgresql_only(backend)
    async with pos_client(product_client) as pos:
        burger = await product(pos, stock_qty=3)
        body = {"order_type": "takeaway", "items": [{"product_id": burger["id"], "qty": 1}]}
        with overlap(monkeypatch) as most:
            answers = await at_once(pos, 50, body)
        assert most[0] > 1, "the orders were placed one after another: nothing raced"
        placed = [answer.json()["order"] for answer in answers if answer.status_code == 201]
        refused = [answer for answer in answers if answer.status_code != 201]
        assert len(placed) == 3
        ids = [each["id"] for each in placed]
        sold_out = {"detail": f"Product {burger['id']} is out of stock: 0 left, 1 wanted"}
        assert [(each.status_code, each.json()) for each in refused] == [(400, sold_out)] * 47
        assert sorted(each["order_number"] for each in placed) == [1, 2, 3]
        stock = await pos.call("GET", f"/products/{burger['id']}/stock")
        assert (stock["qty"], stock["in_stock"]) == (0, False)
        [initial, *sales] = await stock_movements(pos, burger["id"])
        assert initial == (3, 3, "initial count", None)
        assert sorted((delta, left, reason) for delta, left, reason, _ in sales) == [
            (-1, 0, "sale"),
            (-1, 1, "sale"),
            (-1, 2, "sale"),
        ]
        assert {movement[3] for movement in sales} == set(ids)
        listed = await pos.call("GET", "/orders")
        assert sorted(each["id"] for each in listed["orders"]) == sorted(ids)


async def test_twenty_orders_with_one_single_use_coupon(
    product_client: ProductClientFactory, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    postgresql_only(backend)
    async with pos_client(product_client) as pos:
        water = await product(pos, "Water", price_cents=1000)
        coupon = {"code": "ONCE", "type": "fixed", "amount_cents": 300, "single_use": True}
        await pos.call("POST", "/coupons", json=coupon, expect=201)
        items = [{"product_id": water["id"], "qty": 1}]
        body = {"order_type": "takeaway", "items": items, "coupon_code": "ONCE"}
        with overlap(monkeypatch) as most:
            answers = await at_once(pos, 20, body)
        assert most[0] > 1, "the orders were placed one after another: nothing raced"
        statuses = sorted(answer.status_code for answer in answers)
        assert statuses == [201] + [422] * 19
        used = {"detail": "Coupon ONCE has already been used"}
        assert all(answer.json() == used for answer in answers if answer.status_code == 422)
        [winner] = [answer.json()["order"] for answer in answers if answer.status_code == 201]
        assert (winner["discount_cents"], winner["total_cents"]) == (300, 700)
        listed = await pos.call("GET", "/orders")
        assert (listed["total"], listed["orders"]) == (1, [winner])
