"""The point of sale API's test helpers: a gateway serving the product in-process with
two stores (``owner`` and ``other``), and the calls the tests repeat: a category,
products, a signed-in customer, an order."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import select

from tollway.testing import ProductClient, ProductClientFactory, Tenant
from tollway_pos.models import StockMovement

POS = "/v1/pos"
CUSTOMER_HEADER = "X-Customer-Token"
PASSWORD = "correct horse battery"


@asynccontextmanager
async def pos_client(
    product_client: ProductClientFactory, **options: Any
) -> AsyncIterator[ProductClient]:
    """``product_client("pos", ...)``: webhooks may go to loopback receivers."""
    gateway_settings = {"webhooks_allow_private_addresses": True, **options.pop("gateway", {})}
    async with product_client("pos", **options, **gateway_settings) as pos:
        yield pos


async def category(pos: ProductClient, name: str = "Burgers", **fields: Any) -> dict[str, Any]:
    created: dict[str, Any] = await pos.call(
        "POST", "/categories", json={"name": name, **fields}, expect=201
    )
    return created


async def product(
    pos: ProductClient, name: str = "Cheeseburger", *, by: Tenant | None = None, **fields: Any
) -> dict[str, Any]:
    """A product (899 cents unless ``price_cents`` is given) of ``by``'s store."""
    body = {"name": name, "price_cents": 899, **fields}
    created: dict[str, Any] = await pos.call("POST", "/products", json=body, expect=201, by=by)
    return created


async def customer(
    pos: ProductClient, email: str = "ada@example.com", *, by: Tenant | None = None, **fields: Any
) -> dict[str, Any]:
    """A registered customer: ``{customer, token, realtime_token, ...}``."""
    body = {"email": email, "password": PASSWORD, **fields}
    registered: dict[str, Any] = await pos.call(
        "POST", "/customers/register", json=body, expect=201, by=by
    )
    return registered


def signed_in(registration: dict[str, Any]) -> dict[str, str]:
    """The headers acting for the registered customer (with the store's key)."""
    return {CUSTOMER_HEADER: registration["token"]}


async def order(
    pos: ProductClient,
    items: list[dict[str, Any]],
    *,
    order_type: str = "takeaway",
    expect: int = 201,
    **fields: Any,
) -> Any:
    headers = fields.pop("headers", None)
    body = {"order_type": order_type, "items": items, **fields}
    placed = await pos.call("POST", "/orders", json=body, expect=expect, headers=headers or {})
    return placed["order"] if expect == 201 else placed


async def stock_movements(
    pos: ProductClient, product_id: str
) -> list[tuple[int, int, str, str | None]]:
    """The product's stock movements, oldest first: ``(delta, qty_after, reason,
    order_id)``."""
    async with pos.gateway.database.transaction() as session:
        rows = await session.execute(
            select(
                StockMovement.delta,
                StockMovement.qty_after,
                StockMovement.reason,
                StockMovement.order_id,
            )
            .where(StockMovement.product_id == product_id)
            .order_by(StockMovement.id)
        )
        return [(delta, after, reason, order_id) for delta, after, reason, order_id in rows]
