"""Stock over HTTP: a product's stock, tracked or not; adjustments by a delta or a
counted quantity (each a ``pos_stock_movements`` row with its reason), their refusals
(which change nothing), a product's movements adding up to its stock (from its initial
count, through sales, adjustments and a cancellation), an untracked product starting to
be tracked, the inventory and its filters, and ``inventory.low_stock`` emitted once per
crossing down to the threshold."""

from __future__ import annotations

from typing import Any

import pytest
from pos_client import order, pos_client, product, stock_movements

from tollway.testing import ProductClient, ProductClientFactory, emitted, subscribe
from tollway_pos.product import LOW_STOCK

UNKNOWN_PRODUCT = "prod_0000000000000000"


async def adjust(pos: ProductClient, item: dict[str, Any], expect: int = 200, **body: Any) -> Any:
    """``POST /inventory/{id}/adjustments`` with ``body``: the item, or the error."""
    path = f"/inventory/{item['id']}/adjustments"
    return await pos.call("POST", path, json=body, expect=expect)


def stocked(item: dict[str, Any], qty: int, threshold: int = 5) -> dict[str, Any]:
    """The inventory item of product ``item`` holding ``qty``."""
    return {
        "product_id": item["id"],
        "product_name": item["name"],
        "qty": qty,
        "low_stock_threshold": threshold,
        "low_stock": qty <= threshold,
        "unit": item["unit"],
    }


async def test_the_stock_of_a_product(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        plenty = await product(pos, "Cola", stock_qty=9, low_stock_threshold=3)
        few = await product(pos, "Fries", stock_qty=3, low_stock_threshold=3)
        none = await product(pos, "Pie", stock_qty=0)
        untracked = await product(pos, "Water")
        expected = {
            plenty["id"]: (True, 9, 3, False),
            few["id"]: (True, 3, 3, True),
            none["id"]: (False, 0, 5, True),
            untracked["id"]: (True, None, 5, False),
        }
        for product_id, (in_stock, qty, threshold, low) in expected.items():
            assert await pos.call("GET", f"/products/{product_id}/stock") == {
                "product_id": product_id,
                "in_stock": in_stock,
                "qty": qty,
                "low_stock_threshold": threshold,
                "low_stock": low,
            }


async def test_adjustments_by_delta_and_by_count(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        cola = await product(pos, "Cola", stock_qty=4, unit="can")
        restocked = await adjust(pos, cola, delta=24, reason=" delivery ")
        assert restocked == stocked(cola, 28)
        assert await adjust(pos, cola, delta=-3) == stocked(cola, 25)
        assert await adjust(pos, cola, set=2, reason="count") == stocked(cola, 2)
        assert await adjust(pos, cola, set=0, reason="spoilt") == stocked(cola, 0)
        assert await pos.call("GET", f"/inventory/{cola['id']}") == stocked(cola, 0)
        shown = await pos.call("GET", f"/products/{cola['id']}")
        assert (shown["stock_qty"], shown["in_stock"]) == (0, False)
        assert shown["updated_at"] != cola["updated_at"]
        assert await stock_movements(pos, cola["id"]) == [
            (4, 4, "initial count", None),
            (24, 28, "delivery", None),
            (-3, 25, "adjustment", None),
            (-23, 2, "count", None),
            (-2, 0, "spoilt", None),
        ]


async def test_a_products_movements_add_up_to_its_stock(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        cola = await product(pos, "Cola", stock_qty=12)
        assert await stock_movements(pos, cola["id"]) == [(12, 12, "initial count", None)]
        kept = await order(pos, [{"product_id": cola["id"], "qty": 2}])
        dropped = await order(pos, [{"product_id": cola["id"], "qty": 3}])
        await adjust(pos, cola, delta=5, reason="delivery")
        await adjust(pos, cola, set=8, reason="count")
        await pos.call("PATCH", f"/orders/{dropped['id']}", json={"status": "cancelled"})
        movements = await stock_movements(pos, cola["id"])
        assert movements == [
            (12, 12, "initial count", None),
            (-2, 10, "sale", kept["id"]),
            (-3, 7, "sale", dropped["id"]),
            (5, 12, "delivery", None),
            (-4, 8, "count", None),
            (3, 11, "cancellation", dropped["id"]),
        ]
        stock = await pos.call("GET", f"/inventory/{cola['id']}")
        assert sum(delta for delta, *_ in movements) == stock["qty"] == 11


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({"delta": 1, "set": 2}, 400, "Give exactly one of delta and set"),
        ({"reason": "count"}, 400, "Give exactly one of delta and set"),
        ({"delta": None, "set": None}, 400, "Give exactly one of delta and set"),
        (
            {"delta": -4},
            409,
            "Product {id} has 3 in stock; an adjustment of -4 would take it below zero",
        ),
        ({"set": -1}, 400, "Invalid request body: Expected `int` >= 0 - at `$.set`"),
        ({"delta": 1, "reason": " "}, 400, "at `$.reason`"),
        ({"delta": 1, "qty": 2}, 400, "Invalid request body: Object contains unknown field `qty`"),
    ],
)
async def test_adjustments_refused_change_nothing(
    product_client: ProductClientFactory, body: dict[str, Any], status: int, detail: str
) -> None:
    async with pos_client(product_client) as pos:
        fries = await product(pos, "Fries", stock_qty=3)
        error = await adjust(pos, fries, expect=status, **body)
        assert error["detail"].endswith(detail.format(id=fries["id"]))
        assert await pos.call("GET", f"/inventory/{fries['id']}") == stocked(fries, 3)
        assert await stock_movements(pos, fries["id"]) == [(3, 3, "initial count", None)]


async def test_adjusting_unknown_and_other_stores_products(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        theirs = await product(pos, stock_qty=3, by=pos.other)
        for product_id in (UNKNOWN_PRODUCT, theirs["id"]):
            error = await adjust(pos, {"id": product_id}, expect=404, delta=1)
            assert error == {"detail": f"Product {product_id} not found"}
            error = await pos.call("GET", f"/inventory/{product_id}", expect=404)
            assert error == {
                "detail": f"Product {product_id} not found or its stock is not tracked"
            }
        await adjust(pos, {"id": "prod_1"}, expect=400, delta=1)
        assert await stock_movements(pos, theirs["id"]) == [(3, 3, "initial count", None)]


async def test_adjusting_an_untracked_product_starts_tracking_it(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        water = await product(pos, "Water")
        juice = await product(pos, "Juice")
        assert await adjust(pos, water, delta=3) == stocked(water, 3)
        assert await adjust(pos, juice, set=8, reason="count") == stocked(juice, 8)
        assert await stock_movements(pos, water["id"]) == [(3, 3, "adjustment", None)]
        assert await stock_movements(pos, juice["id"]) == [(8, 8, "count", None)]
        stock = await pos.call("GET", f"/products/{water['id']}/stock")
        assert (stock["qty"], stock["in_stock"]) == (3, True)
        # Taking from an untracked product counts from 0: refused, and still untracked.
        tea = await product(pos, "Tea")
        error = await adjust(pos, tea, expect=409, delta=-1)
        assert error == {
            "detail": f"Product {tea['id']} has 0 in stock; an adjustment of -1 would "
            "take it below zero"
        }
        stock = await pos.call("GET", f"/products/{tea['id']}/stock")
        assert (stock["qty"], stock["in_stock"]) == (None, True)
        await pos.call("GET", f"/inventory/{tea['id']}", expect=404)


async def test_the_inventory_and_its_filters(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        cola = await product(pos, "Cola", stock_qty=40)
        fries = await product(pos, "Fries", stock_qty=2, unit="bag")
        pie = await product(pos, "Pie", stock_qty=0, low_stock_threshold=0)
        water = await product(pos, "Water")
        everything = [stocked(cola, 40), stocked(fries, 2), stocked(pie, 0, threshold=0)]
        assert await pos.call("GET", "/inventory") == {"inventory": everything}
        low = await pos.call("GET", "/inventory", params={"low_stock_only": "true"})
        assert low == {"inventory": everything[1:]}
        out = await pos.call("GET", "/inventory", params={"out_of_stock": "true"})
        assert out == {"inventory": everything[2:]}
        both = {"low_stock_only": "true", "out_of_stock": "true"}
        assert await pos.call("GET", "/inventory", params=both) == {"inventory": everything[2:]}
        error = await pos.call("GET", f"/inventory/{water['id']}", expect=404)
        assert error == {"detail": f"Product {water['id']} not found or its stock is not tracked"}
        assert await pos.call("GET", "/inventory", by=pos.other) == {"inventory": []}
        await pos.call("GET", "/inventory", params={"out_of_stock": "maybe"}, expect=400)


async def test_low_stock_is_emitted_once_per_crossing(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        await subscribe(pos.gateway, pos.owner.account_id, [LOW_STOCK])
        cola = await product(pos, "Cola", stock_qty=10)
        await product(pos, "Fries", stock_qty=2)  # created low: not a crossing
        await adjust(pos, cola, delta=-4)  # 6
        assert await emitted(pos.gateway) == []
        await adjust(pos, cola, delta=-1)  # 5: crosses down to the threshold
        await adjust(pos, cola, delta=-2)  # 3: still low, no crossing
        await adjust(pos, cola, set=5)  # 5: still low
        account = pos.owner.account_id
        assert await emitted(pos.gateway) == [(account, LOW_STOCK, stocked(cola, 5))]
        await adjust(pos, cola, set=6)  # back above
        await adjust(pos, cola, delta=-6)  # 0: crosses again, in one step
        assert await emitted(pos.gateway) == [
            (account, LOW_STOCK, stocked(cola, 5)),
            (account, LOW_STOCK, stocked(cola, 0)),
        ]


async def test_a_sale_crossing_the_threshold_emits_low_stock(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        await subscribe(pos.gateway, pos.owner.account_id, [LOW_STOCK])
        fries = await product(pos, "Fries", stock_qty=7, low_stock_threshold=4)
        cola = await product(pos, "Cola", stock_qty=9, low_stock_threshold=4)
        placed = await order(
            pos, [{"product_id": fries["id"], "qty": 3}, {"product_id": cola["id"], "qty": 2}]
        )
        assert await emitted(pos.gateway) == [
            (pos.owner.account_id, LOW_STOCK, stocked(fries, 4, threshold=4))
        ]
        assert await stock_movements(pos, fries["id"]) == [
            (7, 7, "initial count", None),
            (-3, 4, "sale", placed["id"]),
        ]
        await order(pos, [{"product_id": fries["id"], "qty": 1}])  # 3: no second event
        assert len(await emitted(pos.gateway)) == 1
