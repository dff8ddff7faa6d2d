"""Placing orders over HTTP: the order as sold (every field, prices frozen at the sale),
order numbers per store, the estimated ready time, every refusal with the product,
group or coupon it names, customers and their tokens, coupons, ``Idempotency-Key``,
the stock an order takes (all of it or none) and the ``order.created`` event."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from pos_client import (
    customer,
    order,
    pos_client,
    product,
    signed_in,
    stock_movements,
)

from tollway.testing import ProductClientFactory, emitted, subscribe
from tollway_pos.product import ORDER_CREATED

ORDER_ID = re.compile(r"ord_[0-9A-Za-z]{16}")
UNKNOWN_PRODUCT = "prod_0000000000000000"
ADDRESS = {"line1": "1 Main St", "city": "Springfield"}
SIZE = {"group": "size", "options": ["S", "L"], "required": True, "prices": {"L": 150}}
EXTRAS = {
    "group": "extras",
    "options": ["bacon", "egg", "onion"],
    "multiple": True,
    "prices": {"bacon": 200, "egg": 100},
}


def line(item: dict[str, Any], qty: int = 1, *choices: tuple[str, str], **fields: Any) -> Any:
    """An order line of ``item`` with the modifier ``choices`` as ``(group, option)``."""
    modifiers = [{"group": group, "option": option} for group, option in choices]
    return {"product_id": item["id"], "qty": qty, "modifiers": modifiers, **fields}


def sold(item: dict[str, Any], qty: int, unit: int, **amounts: Any) -> dict[str, Any]:
    """The line an order shows for ``qty`` of ``item`` at ``unit`` cents."""
    discount = amounts.pop("line_discount_cents", 0)
    return {
        "product_id": item["id"],
        "name": item["name"],
        "qty": qty,
        "modifiers": [],
        "notes": None,
        "unit_price_cents": unit,
        "line_discount_cents": discount,
        "coupon_cents": 0,
        "loyalty_cents": 0,
        "total_cents": unit * qty - discount,
        **amounts,
    }


async def test_an_order_as_placed(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client, settings={"tax_bps": 1000}) as pos:
        burger = await product(pos, prep_minutes=12, stock_qty=10, modifiers=[SIZE, EXTRAS])
        fries = await product(pos, "Fries", price_cents=299, prep_minutes=5, discount_bps=1000)
        choices = [("size", "L"), ("extras", "bacon"), ("extras", "onion")]
        placed = await order(
            pos,
            [line(burger, 2, *choices, notes="no pickles"), line(fries, 3)],
            order_type="dine_in",
            table_id=" T4 ",
            notes="Birthday",
        )
        assert ORDER_ID.fullmatch(placed["id"])
        # 899 + 150 (L) + 200 (bacon) a burger; 3 fries at 299 less 10% (89.7 -> 90).
        modifiers = [{"group": group, "option": option} for group, option in choices]
        burgers = sold(burger, 2, 1249, modifiers=modifiers, notes="no pickles")
        assert placed == {
            "id": placed["id"],
            "order_number": 1,
            "status": "pending",
            "order_type": "dine_in",
            "items": [burgers, sold(fries, 3, 299, line_discount_cents=90)],
            "customer_id": None,
            "table_id": "T4",
            "delivery_address": None,
            "notes": "Birthday",
            "coupon_code": None,
            "subtotal_cents": 3305,
            "discount_cents": 0,
            "loyalty_discount_cents": 0,
            "tax_cents": 330,  # 330.5, half to even
            "delivery_fee_cents": 0,
            "total_cents": 3635,
            "currency": "usd",
            "points_earned": 0,
            "estimated_ready": placed["estimated_ready"],
            "created_at": placed["created_at"],
            "updated_at": placed["created_at"],
            "completed_at": None,
            "cancelled_at": None,
        }
        created = datetime.fromisoformat(placed["created_at"])
        assert created.tzinfo is not None
        ready = datetime.fromisoformat(placed["estimated_ready"])
        assert ready - created == timedelta(minutes=12)  # the slowest product's
        # Sold is sold: the catalog's later changes leave the order as it was.
        changed = {"name": "Big burger", "price_cents": 1299}
        await pos.call("PATCH", f"/products/{burger['id']}", json=changed)
        assert await pos.call("GET", f"/orders/{placed['id']}") == {"order": placed}


async def test_order_numbers_count_per_store(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        ours, theirs = await product(pos), await product(pos, by=pos.other)
        numbers = [(await order(pos, [line(ours)]))["order_number"] for _ in range(3)]
        body = {"order_type": "takeaway", "items": [line(theirs)]}
        other = await pos.call("POST", "/orders", json=body, by=pos.other, expect=201)
        assert (numbers, other["order"]["order_number"]) == ([1, 2, 3], 1)
        assert (await order(pos, [line(ours)]))["order_number"] == 4


async def test_products_an_order_cannot_have(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        theirs = await product(pos, by=pos.other)
        hidden = await product(pos, "Old menu", is_active=False)
        for product_id in (UNKNOWN_PRODUCT, theirs["id"], hidden["id"]):
            refused = await order(pos, [{"product_id": product_id, "qty": 1}], expect=400)
            assert refused == {"detail": f"Product {product_id} not found"}
        assert (await pos.call("GET", "/orders"))["total"] == 0


async def test_more_than_the_stock_takes_nothing(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        burger, fries = await product(pos, stock_qty=2), await product(pos, "Fries", stock_qty=9)
        too_many = f"Product {burger['id']} is out of stock: 2 left, 3 wanted"
        refused = await order(pos, [line(burger, 3)], expect=400)
        assert refused == {"detail": too_many}
        # Two lines of one product count together; the other line's stock stays.
        both = [line(fries, 4), line(burger, 2), line(burger, 1)]
        assert await order(pos, both, expect=400) == {"detail": too_many}
        for item, left in ((burger, 2), (fries, 9)):
            stock = await pos.call("GET", f"/products/{item['id']}/stock")
            assert stock["qty"] == left
            assert await stock_movements(pos, item["id"]) == [(left, left, "initial count", None)]
        assert (await order(pos, [line(burger, 1), line(burger, 1)]))["order_number"] == 1


async def test_modifier_choices(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        burger = await product(pos, modifiers=[SIZE, EXTRAS])
        refusals = [
            (
                [("size", "S"), ("sauce", "bbq")],
                f"Product {burger['id']} has no modifier group 'sauce'",
            ),
            ([("size", "XL")], "'XL' is not an option of modifier group 'size'"),
            ([("size", "S"), ("size", "L")], "Modifier group 'size' takes one option"),
            ([("extras", "egg")], f"Modifier group 'size' is required for product {burger['id']}"),
            (
                [("size", "S"), ("extras", "egg"), ("extras", "egg")],
                "Option 'egg' of group 'extras' is given twice",
            ),
        ]
        for choices, detail in refusals:
            refused = await order(pos, [line(burger, 1, *choices)], expect=400)
            assert refused == {"detail": detail}, choices
        several = [("size", "S"), ("extras", "egg"), ("extras", "bacon")]
        placed = await order(pos, [line(burger, 2, *several)])
        assert placed["items"][0]["unit_price_cents"] == 899 + 100 + 200
        assert placed["total_cents"] == 2 * 1199


async def test_what_the_order_type_allows(product_client: ProductClientFactory) -> None:
    fee_and_tax = {"delivery_fee_cents": 499, "tax_bps": 1000}
    async with pos_client(product_client, settings=fee_and_tax) as pos:
        items = [line(await product(pos, price_cents=1000))]
        refusals: list[tuple[str, dict[str, Any], str]] = [
            ("takeaway", {"table_id": "T1"}, "table_id is only for dine_in orders"),
            ("delivery", {}, "delivery_address is required for delivery orders"),
            (
                "takeaway",
                {"delivery_address": ADDRESS},
                "delivery_address is only for delivery orders",
            ),
        ]
        for order_type, fields, detail in refusals:
            refused = await order(pos, items, order_type=order_type, expect=400, **fields)
            assert refused == {"detail": detail}
        address = {**ADDRESS, "line2": "Flat 2", "postal_code": "12345", "country": "US"}
        delivered = await order(pos, items, order_type="delivery", delivery_address=address)
        assert delivered["delivery_address"] == {**address, "instructions": None}
        # The fee is added after the tax, untaxed.
        fee_tax_total = (
            delivered["delivery_fee_cents"],
            delivered["tax_cents"],
            delivered["total_cents"],
        )
        assert fee_tax_total == (499, 100, 1599)
        for order_type in ("takeaway", "ecommerce", "dine_in"):
            placed = await order(pos, items, order_type=order_type)
            assert (placed["delivery_fee_cents"], placed["total_cents"]) == (0, 1100)


async def test_the_orders_customer(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        items = [line(await product(pos))]
        ada, bob = await customer(pos), await customer(pos, "bob@example.com")
        theirs = await customer(pos, "ada@example.com", by=pos.other)
        placed = await order(pos, items, customer_id=ada["customer"]["id"])
        assert placed["customer_id"] == ada["customer"]["id"]
        for missing in ("cus_0000000000000000", theirs["customer"]["id"]):
            refused = await order(pos, items, customer_id=missing, expect=404)
            assert refused == {"detail": f"Customer {missing} not found"}
        as_bob = await order(pos, items, headers=signed_in(bob))
        assert as_bob["customer_id"] == bob["customer"]["id"]
        again = await order(pos, items, headers=signed_in(bob), customer_id=bob["customer"]["id"])
        assert again["customer_id"] == bob["customer"]["id"]
        refused = await order(
            pos, items, headers=signed_in(bob), customer_id=ada["customer"]["id"], expect=400
        )
        assert refused == {"detail": "customer_id must be the signed-in customer's own"}
        history = await pos.call("GET", "/customers/me/orders", headers=signed_in(bob))
        assert [each["id"] for each in history["orders"]] == [again["id"], as_bob["id"]]
        # A token must be this store's customer token: not another store's, not the
        # realtime token, not anything else.
        invalid = {"detail": "X-Customer-Token is not a valid token for this product"}
        for token in (theirs["token"], bob["realtime_token"], "not-a-token"):
            headers = {"X-Customer-Token": token}
            assert await order(pos, items, headers=headers, expect=401) == invalid


async def test_coupons_off_an_order(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client, settings={"tax_bps": 1000}) as pos:
        items = [line(await product(pos, price_cents=1000), 2)]
        coupons = [
            {"code": "SAVE15", "type": "percent", "percent_bps": 1500},
            {"code": "FIVE", "type": "fixed", "amount_cents": 500},
            {"code": "HUGE", "type": "fixed", "amount_cents": 5000},
        ]
        for coupon in coupons:
            await pos.call("POST", "/coupons", json=coupon, expect=201)
        # (code sent, code kept, coupon's discount, tax, total) on a 2000 cents subtotal.
        for sent, code, discount, tax, total in [
            ("save15", "SAVE15", 300, 170, 1870),
            ("FIVE", "FIVE", 500, 150, 1650),
            ("HUGE", "HUGE", 2000, 0, 0),  # capped at the subtotal
        ]:
            placed = await order(pos, items, coupon_code=sent)
            assert (placed["coupon_code"], placed["subtotal_cents"]) == (code, 2000)
            assert (placed["discount_cents"], placed["items"][0]["coupon_cents"]) == (discount,) * 2
            assert (placed["tax_cents"], placed["total_cents"]) == (tax, total)


async def test_coupons_an_order_refuses(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        items = [line(await product(pos), 1)]
        past = (datetime.now().astimezone() - timedelta(minutes=1)).isoformat()
        for coupon in (
            {"code": "OLD", "type": "percent", "percent_bps": 1000, "expires_at": past},
            {"code": "ONCE", "type": "fixed", "amount_cents": 100, "single_use": True},
        ):
            await pos.call("POST", "/coupons", json=coupon, expect=201)
        for code, detail in [
            ("NOPE", "Coupon NOPE does not exist"),
            ("old", "Coupon old has expired"),
        ]:
            assert await order(pos, items, coupon_code=code, expect=422) == {"detail": detail}
        first = await order(pos, items, coupon_code="ONCE")
        used = {"detail": "Coupon ONCE has already been used"}
        assert await order(pos, items, coupon_code="ONCE", expect=422) == used
        assert (await pos.call("GET", "/orders"))["total"] == 1
        # Cancelling the order that used it frees it for another.
        await pos.call("PATCH", f"/orders/{first['id']}", json={"status": "cancelled"})
        second = await order(pos, items, coupon_code="once")
        assert (second["coupon_code"], second["discount_cents"]) == ("ONCE", 100)
        assert await order(pos, items, coupon_code="ONCE", expect=422) == used


async def test_an_idempotency_key_places_one_order(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        await subscribe(pos.gateway, pos.owner.account_id, [ORDER_CREATED])
        burger = await product(pos, stock_qty=5)
        body = {"order_type": "takeaway", "items": [line(burger, 2)]}
        headers = {**pos.owner.headers, "Idempotency-Key": "till-1-sale-42"}
        first = await pos.client.post("/v1/pos/orders", json=body, headers=headers)
        again = await pos.client.post("/v1/pos/orders", json=body, headers=headers)
        assert (first.status_code, again.status_code) == (201, 201)
        assert again.json() == first.json()
        assert again.headers["Idempotent-Replayed"] == "true"
        listed = await pos.call("GET", "/orders")
        assert (listed["total"], listed["orders"]) == (1, [first.json()["order"]])
        assert (await pos.call("GET", f"/products/{burger['id']}/stock"))["qty"] == 3
        order_id = first.json()["order"]["id"]
        assert await stock_movements(pos, burger["id"]) == [
            (5, 5, "initial count", None),
            (-2, 3, "sale", order_id),
        ]
        assert len(await emitted(pos.gateway)) == 1
        other = {**body, "items": [line(burger, 1)]}
        reused = await pos.client.post("/v1/pos/orders", json=other, headers=headers)
        assert reused.status_code == 409
        assert "already used with a different request" in reused.json()["detail"]
        assert (await pos.call("GET", "/orders"))["total"] == 1
        assert (await pos.call("GET", f"/products/{burger['id']}/stock"))["qty"] == 3


async def test_an_order_takes_tracked_stock(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        burger, water = await product(pos, stock_qty=7), await product(pos, "Water")
        placed = await order(pos, [line(burger, 2), line(water, 40), line(burger, 1)])
        assert await pos.call("GET", f"/products/{burger['id']}/stock") == {
            "product_id": burger["id"],
            "in_stock": True,
            "qty": 4,
            "low_stock_threshold": 5,
            "low_stock": True,
        }
        assert await pos.call("GET", f"/products/{water['id']}/stock") == {
            "product_id": water["id"],
            "in_stock": True,
            "qty": None,
            "low_stock_threshold": 5,
            "low_stock": False,
        }
        assert await stock_movements(pos, burger["id"]) == [
            (7, 7, "initial count", None),
            (-3, 4, "sale", placed["id"]),
        ]
        assert await stock_movements(pos, water["id"]) == []


async def test_placing_emits_order_created(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        await subscribe(pos.gateway, pos.owner.account_id, [ORDER_CREATED])
        items = [line(await product(pos))]
        placed = await order(pos, items, notes="Ring twice")
        await order(pos, [{"product_id": UNKNOWN_PRODUCT, "qty": 1}], expect=400)
        assert await emitted(pos.gateway) == [(pos.owner.account_id, ORDER_CREATED, placed)]


async def test_the_largest_amounts_are_placed_as_priced(
    product_client: ProductClientFactory,
) -> None:
    """The API takes prices up to 1,000,000.00 and 999 of a line: the order keeps the
    cart's exact amounts, whatever the database."""
    async with pos_client(product_client) as pos:
        items = [line(await product(pos, "Yacht", price_cents=100_000_000), 999)] * 3
        cart = await pos.call("POST", "/cart/calculate", json={"items": items})
        assert cart["total_cents"] == 3 * 999 * 100_000_000
        placed = await order(pos, items)
        money = ["items", "subtotal_cents", "tax_cents", "total_cents"]
        assert {name: placed[name] for name in money} == {name: cart[name] for name in money}
        assert await pos.call("GET", f"/orders/{placed['id']}") == {"order": placed}
