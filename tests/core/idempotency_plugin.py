"""A product whose creating POSTs declare ``idempotent=True``, for the kit's
``Idempotency-Key`` tests.

``orders`` at /v1/orders: ``POST /orders`` inserts an order in the request's
transaction and answers 201 with its ``Location``; the item names steer it (``hold``
waits for the test, ``declined`` is a 422 after the insert, ``flaky`` fails with a 500
the first time). Every run of a handler is counted, so a test can tell a replay from a
second run, and every order is a row, so a test can tell what was committed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import msgspec
from litestar import Response, post
from litestar.di import NamedDependency
from litestar.enums import MediaType
from litestar.params import JSONBody
from sqlalchemy import Column, Integer, MetaData, String, Table, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import (
    Access,
    CurrentCaller,
    CurrentCustomer,
    CurrentGateway,
    Gateway,
    Plan,
    Product,
    RouteRegistrar,
    UnprocessableEntity,
    hookimpl,
)

WRITE = "orders:write"
metadata = MetaData()
orders = Table(
    "idempotency_test_orders",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("account_id", Integer, nullable=False),
    Column("item", String(100), nullable=False),
)


class Order(msgspec.Struct, forbid_unknown_fields=True):
    item: str


class Placed(msgspec.Struct):
    id: int
    item: str


class Orders:
    """Per-gateway: counts the handlers' runs and holds ``hold`` orders for the test."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def run(self, item: str) -> None:
        """Count a run of a handler for ``item``; ``hold`` waits until released."""
        self.runs[item] += 1
        if item == "hold":
            self.entered.set()
            await self.release.wait()
        if item == "flaky" and self.runs[item] == 1:
            raise RuntimeError("the first attempt fails")

    async def count(self, gateway: Gateway, item: str) -> int:
        async with gateway.database.transaction() as session:
            found = await session.scalar(
                select(func.count()).select_from(orders).where(orders.c.item == item)
            )
        return int(found or 0)


async def _place(session: AsyncSession, account_id: int, item: str) -> Placed:
    inserted = await session.execute(
        insert(orders).values(account_id=account_id, item=item).returning(orders.c.id)
    )
    return Placed(int(inserted.scalar_one()), item)


@post("/orders", scope=WRITE, idempotent=True)
async def place(
    data: JSONBody[Order],
    transaction: NamedDependency[AsyncSession],
    caller: CurrentCaller,
    orders_service: NamedDependency[Orders],
) -> Response[Placed]:
    await orders_service.run(data.item)
    placed = await _place(transaction, caller.principal.account_id, data.item)
    if data.item == "declined":
        raise UnprocessableEntity("Your card was declined")  # the insert is rolled back
    return Response(placed, status_code=201, headers={"Location": f"/v1/orders/{placed.id}"})


@post("/receipts", scope=WRITE, idempotent=True, media_type=MediaType.TEXT)
async def receipt(data: JSONBody[Order], orders_service: NamedDependency[Orders]) -> str:
    await orders_service.run(data.item)
    return f"receipt for {data.item}"


@post("/own-transaction", scope=WRITE, idempotent=True)
async def own_transaction(
    data: JSONBody[Order],
    gateway: CurrentGateway,
    caller: CurrentCaller,
    orders_service: NamedDependency[Orders],
) -> Placed:
    """Commits on its own: its answer is kept after the commit, before it is sent."""
    await orders_service.run(data.item)
    async with gateway.database.transaction() as session:
        return await _place(session, caller.principal.account_id, data.item)


@post("/for-customer", access=Access(scope=WRITE, customer=True), idempotent=True)
async def for_customer(
    data: JSONBody[Order], customer: CurrentCustomer, orders_service: NamedDependency[Orders]
) -> dict[str, str]:
    await orders_service.run(data.item)
    return {"customer": customer.id, "item": data.item}


@post("/plain", scope=WRITE)
async def plain(
    data: JSONBody[Order],
    transaction: NamedDependency[AsyncSession],
    caller: CurrentCaller,
    orders_service: NamedDependency[Orders],
) -> Placed:
    """Declares nothing: the header means nothing here."""
    await orders_service.run(data.item)
    return await _place(transaction, caller.principal.account_id, data.item)


ROUTES = [place, receipt, own_transaction, for_customer, plain]


class OrdersPlugin:
    def __init__(self, routes: list[Any] | None = None) -> None:
        self.routes = ROUTES if routes is None else routes

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(Product("orders", "/v1/orders"))

    @hookimpl
    def tollway_register_scopes(self, register: Callable[[str, str], None]) -> None:
        register(WRITE, "Place orders")

    @hookimpl
    def tollway_register_plans(self, register: Callable[[str, Plan], None]) -> None:
        register("orders", Plan("basic", 10_000))

    @hookimpl
    def tollway_register_services(
        self, register: Callable[[object], None], gateway: Gateway
    ) -> None:
        register(Orders())

    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        register("orders", self.routes, dependencies={"orders_service": Orders})

    @hookimpl
    async def tollway_startup(self, gateway: Gateway) -> None:
        async with gateway.database.transaction() as session:
            connection = await session.connection()
            await connection.run_sync(metadata.create_all)
            await connection.execute(orders.delete())
