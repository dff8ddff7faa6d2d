"""An order's status over HTTP: every move of the 6 by 6 table, legal or 409; asking for
the status an order has; cancelling (stock back, out of the reports); delivering
(loyalty points, and the tier they reach discounting the customer's next orders); the
events of each move; and listing orders (newest first, filters, the store's days)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from pos_client import customer, order, pos_client, product, signed_in, stock_movements
from sqlalchemy import update

from tollway.testing import ProductClient, ProductClientFactory, emitted, subscribe
from tollway_pos.models import Order
from tollway_pos.product import EVENTS

STATUSES = ("pending", "confirmed", "preparing", "ready", "delivered", "cancelled")
PATH_TO = {
    "pending": (),
    "confirmed": ("confirmed",),
    "preparing": ("confirmed", "preparing"),
    "ready": ("confirmed", "preparing", "ready"),
    "delivered": ("confirmed", "preparing", "ready", "delivered"),
    "cancelled": ("cancelled",),
}
"""The moves taking a new order to each status."""
FINAL_AT = {"delivered": "completed_at", "cancelled": "cancelled_at"}
LEGAL = {
    ("pending", "confirmed"),
    ("pending", "cancelled"),
    ("confirmed", "preparing"),
    ("confirmed", "cancelled"),
    ("preparing", "ready"),
    ("preparing", "cancelled"),
    ("ready", "delivered"),
}


async def move(pos: ProductClient, placed: dict[str, Any], status: str, expect: int = 200) -> Any:
    """``PATCH`` the order to ``status``: the order (200) or the error's body."""
    answer = await pos.call(
        "PATCH", f"/orders/{placed['id']}", json={"status": status}, expect=expect
    )
    return answer["order"] if expect == 200 else answer


async def order_in(pos: ProductClient, items: list[dict[str, Any]], status: str) -> Any:
    """A new order of ``items``, moved to ``status``."""
    placed = await order(pos, items)
    for step in PATH_TO[status]:
        placed = await move(pos, placed, step)
    return placed


def answer_to(placed: dict[str, Any], wanted: str, answer: Any) -> tuple[int, Any]:
    """What ``PATCH`` must answer when ``placed`` is asked to become ``wanted``; the
    time of a move is ``answer``'s own ``updated_at``."""
    current = placed["status"]
    if wanted == current:
        return 200, {"order": placed}
    if (current, wanted) not in LEGAL:
        return 409, {"detail": f"Order {placed['id']} is {current}; it cannot become {wanted}"}
    now = answer.get("order", {}).get("updated_at")
    moved = {**placed, "status": wanted, "updated_at": now}
    if wanted in FINAL_AT:
        moved[FINAL_AT[wanted]] = now
    return 200, {"order": moved}


async def test_every_move_of_the_status_table(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        items = [{"product_id": (await product(pos))["id"], "qty": 1}]
        wrong: list[tuple[Any, ...]] = []
        for current in STATUSES:
            for wanted in STATUSES:
                placed = await order_in(pos, items, current)
                path = f"/v1/pos/orders/{placed['id']}"
                response = await pos.client.patch(path, json={"status": wanted})
                status, body = answer_to(placed, wanted, response.json())
                if (response.status_code, response.json()) != (status, body):
                    wrong.append((current, wanted, response.status_code, response.text))
                stored = await pos.call("GET", path.removeprefix("/v1/pos"))
                if stored != (body if status == 200 else {"order": placed}):
                    wrong.append((current, wanted, "stored", stored))
                if status == 200 and wanted != current:
                    moved_at = datetime.fromisoformat(body["order"]["updated_at"])
                    if moved_at <= datetime.fromisoformat(placed["updated_at"]):
                        wrong.append((current, wanted, "updated_at", moved_at))
        assert wrong == []


async def test_asking_for_the_current_status_changes_nothing(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        await subscribe(pos.gateway, pos.owner.account_id, list(EVENTS))
        placed = await order(pos, [{"product_id": (await product(pos))["id"], "qty": 1}])
        confirmed = await move(pos, placed, "confirmed")
        updated = datetime.fromisoformat(confirmed["updated_at"])
        assert updated > datetime.fromisoformat(placed["updated_at"])
        before = await emitted(pos.gateway)
        assert await move(pos, confirmed, "confirmed") == confirmed
        assert await pos.call("GET", f"/orders/{placed['id']}") == {"order": confirmed}
        assert await emitted(pos.gateway) == before


async def test_each_move_emits_its_events(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        await subscribe(pos.gateway, pos.owner.account_id, list(EVENTS))
        items = [{"product_id": (await product(pos))["id"], "qty": 1}]
        served, dropped = await order(pos, items), await order(pos, items)
        expected = [("order.created", served), ("order.created", dropped)]
        for step in PATH_TO["delivered"]:
            served = await move(pos, served, step)
            expected.append(("order.updated", served))
        expected.append(("order.completed", served))
        dropped = await move(pos, dropped, "cancelled")
        expected += [("order.updated", dropped), ("order.cancelled", dropped)]
        await move(pos, dropped, "confirmed", expect=409)
        account = pos.owner.account_id
        assert await emitted(pos.gateway) == [(account, *each) for each in expected]


async def test_cancelling_gives_the_stock_back(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        burger = await product(pos, stock_qty=10)
        placed = await order_in(pos, [{"product_id": burger["id"], "qty": 3}], "preparing")
        day = placed["created_at"][:10]  # the store's day: UTC by default
        report = await pos.call("GET", f"/reports/daily/{day}")
        assert (report["total_orders"], report["cancelled_orders"]) == (1, 0)
        assert report["gross_sales_cents"] == 3 * 899
        assert [top["qty_sold"] for top in report["top_products"]] == [3]
        cancelled = await move(pos, placed, "cancelled")
        assert cancelled["cancelled_at"] == cancelled["updated_at"]
        assert cancelled["completed_at"] is None
        assert (await pos.call("GET", f"/products/{burger['id']}/stock"))["qty"] == 10
        assert await stock_movements(pos, burger["id"]) == [
            (10, 10, "initial count", None),
            (-3, 7, "sale", placed["id"]),
            (3, 10, "cancellation", placed["id"]),
        ]
        report = await pos.call("GET", f"/reports/daily/{day}")
        assert (report["total_orders"], report["cancelled_orders"]) == (0, 1)
        assert (report["gross_sales_cents"], report["top_products"]) == (0, [])


async def test_cancelling_gives_back_only_what_was_taken(
    product_client: ProductClientFactory,
) -> None:
    """A product sold while its stock was not tracked, then counted: cancelling the
    sale must not add units that never left the count."""
    async with pos_client(product_client) as pos:
        burger = await product(pos)
        placed = await order(pos, [{"product_id": burger["id"], "qty": 2}])
        counted = {"set": 10, "reason": "first count"}
        await pos.call("POST", f"/inventory/{burger['id']}/adjustments", json=counted)
        await move(pos, placed, "cancelled")
        assert (await pos.call("GET", f"/products/{burger['id']}/stock"))["qty"] == 10
        assert await stock_movements(pos, burger["id"]) == [(10, 10, "first count", None)]


async def test_delivering_earns_points_and_a_tier(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client, settings={"points_per_unit": 50}) as pos:
        ada = await customer(pos)
        meal = [{"product_id": (await product(pos, "Meal", price_cents=1099))["id"], "qty": 1}]
        tea = [{"product_id": (await product(pos, "Tea", price_cents=1000))["id"], "qty": 1}]
        ready = await order_in(pos, meal, "ready")
        ours = await order(pos, meal, headers=signed_in(ada))
        assert ours["loyalty_discount_cents"] == 0  # bronze
        for step in PATH_TO["ready"]:
            ours = await move(pos, ours, step)

        async def profile() -> tuple[int, str]:
            me = (await pos.call("GET", "/customers/me", headers=signed_in(ada)))["customer"]
            return me["loyalty_points"], me["loyalty_tier"]

        assert (ours["points_earned"], await profile()) == (0, (0, "bronze"))
        served = await move(pos, ours, "delivered")
        assert served["completed_at"] == served["updated_at"]
        assert served["points_earned"] == 10 * 50  # whole dollars of 10.99 only
        assert (await move(pos, ready, "delivered"))["points_earned"] == 0  # nobody's
        assert await profile() == (500, "silver")
        # Silver takes 2% off the customer's carts and orders, not anyone else's.
        body = {"items": tea, "customer_id": ada["customer"]["id"]}
        cart = await pos.call("POST", "/cart/calculate", json=body)
        assert (cart["loyalty_discount_cents"], cart["loyalty_discount"]) == (20, 0.2)
        assert cart["total_cents"] == 980
        theirs = await order(pos, tea, headers=signed_in(ada))
        assert (theirs["loyalty_discount_cents"], theirs["total_cents"]) == (20, 980)
        assert theirs["items"][0]["loyalty_cents"] == 20
        assert (await order(pos, tea))["total_cents"] == 1000


async def test_listing_orders(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        items = [{"product_id": (await product(pos))["id"], "qty": 1}]
        first, second, third = [await order(pos, items) for _ in range(3)]
        second = await move(pos, second, "confirmed")
        listed = await pos.call("GET", "/orders")
        assert listed == {"orders": [third, second, first], "total": 3, "offset": 0}
        page = await pos.call("GET", "/orders", params={"limit": 1, "offset": 1})
        assert page == {"orders": [second], "total": 3, "offset": 1}
        pending = await pos.call("GET", "/orders", params={"status": "pending"})
        assert pending == {"orders": [third, first], "total": 2, "offset": 0}
        none = await pos.call("GET", "/orders", params={"status": "ready"})
        assert none == {"orders": [], "total": 0, "offset": 0}
        bad = await pos.call("GET", "/orders", params={"date_from": "2024-02-30"}, expect=400)
        assert bad == {"detail": "date_from is not a date (YYYY-MM-DD): 2024-02-30"}


async def test_date_filters_are_the_stores_days(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client, settings={"timezone": "Asia/Tokyo"}) as pos:
        items = [{"product_id": (await product(pos))["id"], "qty": 1}]
        early, today = await order(pos, items), await order(pos, items)
        # 20:00 UTC on March 1st is 05:00 on March 2nd in Tokyo.
        at = datetime(2024, 3, 1, 20, 0, tzinfo=UTC)
        async with pos.gateway.database.transaction() as session:
            await session.execute(
                update(Order).where(Order.id == early["id"]).values(created_at=at)
            )
        early = (await pos.call("GET", f"/orders/{early['id']}"))["order"]
        for date_from, date_to, found in [
            ("2024-03-02", "2024-03-02", [early]),
            ("2024-03-01", "2024-03-01", []),
            ("2024-03-03", None, [today]),
            (None, "2024-03-02", [early]),
            ("2024-01-01", None, [today, early]),
        ]:
            params = {"date_from": date_from, "date_to": date_to}
            given = {name: value for name, value in params.items() if value is not None}
            listed = await pos.call("GET", "/orders", params=given)
            assert (listed["orders"], listed["total"]) == (found, len(found)), given
        local = datetime.fromisoformat(today["created_at"]).astimezone(ZoneInfo("Asia/Tokyo"))
        day = local.date().isoformat()
        listed = await pos.call("GET", "/orders", params={"date_from": day, "date_to": day})
        assert listed["orders"] == [today]


async def test_another_stores_order_is_not_found(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        placed = await order(pos, [{"product_id": (await product(pos))["id"], "qty": 1}])
        missing = {"detail": f"Order {placed['id']} not found"}
        path = f"/orders/{placed['id']}"
        assert await pos.call("GET", path, by=pos.other, expect=404) == missing
        moved = {"status": "confirmed"}
        assert await pos.call("PATCH", path, json=moved, by=pos.other, expect=404) == missing
        assert (await pos.call("GET", "/orders", by=pos.other))["total"] == 0
        assert (await pos.call("GET", path))["order"]["status"] == "pending"
