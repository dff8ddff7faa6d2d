"""A store's orders in one transaction: placing one, moving it through its statuses.

Placing an order takes its stock in the same transaction as the order's rows
(:meth:`tollway_pos.catalog.Catalog.move_stock`: a conditional ``UPDATE`` per product,
so of 50 concurrent orders for the last 3 units exactly 3 are placed and the others get
a 400, and stock never goes below zero), claims a single-use coupon with a conditional
``UPDATE`` too, and takes the store's next order number by locking its counter row
(after the products, in every transaction, so none waits on another in a cycle).

Status moves (spec 3; what moves them was not shown, :data:`MOVES` is our rule):
pending -> confirmed -> preparing -> ready -> delivered, and cancelled from pending,
confirmed or preparing. Any other move is a 409; asking for the status an order already
has changes nothing. Cancelling gives the stock back and frees a single-use coupon;
delivering earns the customer loyalty points.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any, cast

import msgspec
from sqlalchemy import Table, bindparam, func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from tollway import (
    BadRequest,
    Conflict,
    UnprocessableEntity,
    utcnow,
)
from tollway.billing import decimals
from tollway_pos import schemas
from tollway_pos.catalog import Catalog, new_id
from tollway_pos.checkout import (
    COUPON,
    CUSTOMER_POINTS,
    StoredCoupon,
    customer_not_found,
    quote,
    wire_lines,
)
from tollway_pos.models import Coupon, Customer, Order, OrderLine, Product, StockMovement, Store
from tollway_pos.product import ORDER_CANCELLED, ORDER_COMPLETED, ORDER_CREATED, ORDER_UPDATED
from tollway_pos.queries import (
    LINE_COLUMNS,
    ORDER_COLUMNS,
    PRODUCT_COLUMNS,
    line_of,
    order_not_found,
    order_of,
    product_row,
)

MOVES: dict[str, frozenset[str]] = {
    "pending": frozenset({"confirmed", "cancelled"}),
    "confirmed": frozenset({"preparing", "cancelled"}),
    "preparing": frozenset({"ready", "cancelled"}),
    "ready": frozenset({"delivered"}),
    "delivered": frozenset(),
    "cancelled": frozenset(),
}
COUPON_REFUSED = {
    "unknown": "Coupon {code} does not exist",
    "expired": "Coupon {code} has expired",
    "used": "Coupon {code} has already been used",
}
ORDERS = cast(Table, Order.__table__)
LINES = cast(Table, OrderLine.__table__)
COUPONS = cast(Table, Coupon.__table__)
CUSTOMERS = cast(Table, Customer.__table__)
STORES = cast(Table, Store.__table__)
PRODUCTS = cast(Table, Product.__table__)
MOVEMENTS = cast(Table, StockMovement.__table__)
SALE = "sale"

NEXT_NUMBER = (
    update(STORES)
    .where(STORES.c.account_id == bindparam("account"))
    .values(last_order_number=STORES.c.last_order_number + 1)
    .returning(STORES.c.last_order_number)
)
"""The store's next order number; the store's row stays locked until the order commits,
so numbers follow one another without a gap."""
NEW_STORE = text(
    "INSERT INTO pos_stores (account_id, last_order_number) VALUES (:account, 0) "
    "ON CONFLICT (account_id) DO NOTHING"
)
PRODUCTS_OF_ORDER = select(*PRODUCT_COLUMNS).where(
    PRODUCTS.c.id.in_(bindparam("ids", expanding=True)),
    PRODUCTS.c.account_id == bindparam("account"),
)
CLAIM_COUPON = (
    update(COUPONS)
    .where(COUPONS.c.id == bindparam("coupon"), COUPONS.c.used_by_order_id.is_(None))
    .values(used_by_order_id=bindparam("order"))
)
FREE_COUPON = (
    update(COUPONS)
    .where(
        COUPONS.c.account_id == bindparam("account"),
        COUPONS.c.used_by_order_id == bindparam("order"),
    )
    .values(used_by_order_id=None)
)
TAKEN_BY_ORDER = (
    select(MOVEMENTS.c.product_id, -func.sum(MOVEMENTS.c.delta))
    .where(MOVEMENTS.c.order_id == bindparam("order"), MOVEMENTS.c.reason == SALE)
    .group_by(MOVEMENTS.c.product_id)
)
"""What an order's sale took from each product's stock."""
CANCEL_LINES = update(LINES).where(LINES.c.order_id == bindparam("order")).values(cancelled=True)
EARN_POINTS = (
    update(CUSTOMERS)
    .where(CUSTOMERS.c.id == bindparam("customer"))
    .values(loyalty_points=CUSTOMERS.c.loyalty_points + bindparam("points"))
)
LOCKED_ORDER = (
    select(*ORDER_COLUMNS)
    .where(Order.id == bindparam("id"), Order.account_id == bindparam("account"))
    .with_for_update()
)
LINES_OF_ORDER = (
    select(*LINE_COLUMNS).where(OrderLine.order_id == bindparam("id")).order_by(OrderLine.position)
)


async def stored_coupon(
    connection: AsyncConnection, account_id: int, code: str
) -> StoredCoupon | None:
    found = (
        await connection.execute(COUPON, {"account_id": account_id, "code_key": code.upper()})
    ).first()
    return None if found is None else StoredCoupon.of(found)


def check_order_shape(data: schemas.OrderCreate) -> None:
    """400 for what the order type rules out: a table on an order not eaten in, a
    delivery without an address or an address on another order."""
    if data.table_id is not None and data.order_type != "dine_in":
        raise BadRequest("table_id is only for dine_in orders")
    if data.order_type == "delivery" and data.delivery_address is None:
        raise BadRequest("delivery_address is required for delivery orders")
    if data.order_type != "delivery" and data.delivery_address is not None:
        raise BadRequest("delivery_address is only for delivery orders")


def points_for(total_cents: int, currency: str, points_per_unit: int) -> int:
    """Loyalty points of a delivered order: per whole currency unit of its total."""
    points: int = total_cents // 10 ** decimals(currency) * points_per_unit
    return points


class Orders:
    """One store's orders, in the transaction of its ``catalog`` (whose stock they
    take and give back)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.session = catalog.session
        self.account_id = catalog.account_id
        self.settings = catalog.settings
        self.webhooks = catalog.webhooks
        self.live = catalog.live

    async def _connection(self) -> AsyncConnection:
        """The transaction's connection: every statement here is Core, run on it
        (the ORM's bookkeeping of bulk updates costs more than the statements)."""
        return await self.session.connection()

    async def _products(self, ids: set[str]) -> dict[str, schemas.Product]:
        rows = await (await self._connection()).execute(
            PRODUCTS_OF_ORDER, {"ids": sorted(ids), "account": self.account_id}
        )
        currency = self.settings.currency
        products = (product_row(currency, row) for row in rows)
        return {product.id: product for product in products}

    async def _customer_points(self, customer_id: str) -> int:
        points = await (await self._connection()).scalar(
            CUSTOMER_POINTS, {"id": customer_id, "account_id": self.account_id}
        )
        if points is None:
            raise customer_not_found(customer_id)
        return int(points)

    async def place(self, data: schemas.OrderCreate, signed_in: str | None) -> schemas.Order:
        """Place the order for ``signed_in`` (the customer of an ``X-Customer-Token``)
        or ``data.customer_id``; emits ``order.created``."""
        check_order_shape(data)
        if signed_in is not None and data.customer_id not in (None, signed_in):
            raise BadRequest("customer_id must be the signed-in customer's own")
        customer_id = signed_in or data.customer_id
        points = None if customer_id is None else await self._customer_points(customer_id)
        products = await self._products({item.product_id for item in data.items})
        coupon = None
        if data.coupon_code is not None:
            coupon = await stored_coupon(
                await self._connection(), self.account_id, data.coupon_code
            )
            reason = "unknown" if coupon is None else coupon.reason_refused(utcnow())
            if reason is not None:
                raise UnprocessableEntity(COUPON_REFUSED[reason].format(code=data.coupon_code))
        fee = self.settings.delivery_fee_cents if data.order_type == "delivery" else 0
        priced = quote(
            data.items,
            products,
            coupon=coupon,
            loyalty_points=points,
            delivery_fee_cents=fee,
            settings=self.settings,
        )
        order_id = new_id("ord")
        wanted: Counter[str] = Counter()
        for item in data.items:
            wanted[item.product_id] -= item.qty
        await self.catalog.move_stock(dict(wanted), reason=SALE, order_id=order_id)
        if coupon is not None and coupon.single_use:
            await self._claim_coupon(coupon, order_id)
        now = utcnow()
        prep = max(products[item.product_id].prep_minutes for item in data.items)
        lines = wire_lines(data.items, priced)
        order = schemas.Order(
            id=order_id,
            order_number=await self._next_number(),
            status="pending",
            order_type=data.order_type,
            items=lines,
            customer_id=customer_id,
            table_id=None if data.table_id is None else data.table_id.strip(),
            delivery_address=data.delivery_address,
            notes=data.notes,
            coupon_code=None if coupon is None else coupon.code,
            subtotal_cents=priced.subtotal_cents,
            discount_cents=priced.coupon_cents,
            loyalty_discount_cents=priced.loyalty_cents,
            tax_cents=priced.tax_cents,
            delivery_fee_cents=priced.delivery_fee_cents,
            total_cents=priced.total_cents,
            currency=self.settings.currency,
            points_earned=0,
            estimated_ready=now + timedelta(minutes=prep),
            created_at=now,
            updated_at=now,
            completed_at=None,
            cancelled_at=None,
        )
        await self._insert(order)
        await self._announce(order, 1, ORDER_CREATED)
        return order

    async def _claim_coupon(self, coupon: StoredCoupon, order_id: str) -> None:
        connection = await self._connection()
        claimed = await connection.execute(CLAIM_COUPON, {"coupon": coupon.id, "order": order_id})
        if claimed.rowcount != 1:
            raise UnprocessableEntity(COUPON_REFUSED["used"].format(code=coupon.code))

    async def _next_number(self) -> int:
        """Taken last before the order's rows are written: the store's row is locked
        from here to the commit, and every order of the store waits for it."""
        connection = await self._connection()
        account = {"account": self.account_id}
        number = await connection.scalar(NEXT_NUMBER, account)
        if number is None:  # the store's first order
            await connection.execute(NEW_STORE, account)
            number = await connection.scalar(NEXT_NUMBER, account)
        assert number is not None, "the store's row was just made"
        return int(number)

    async def _insert(self, order: schemas.Order) -> None:
        row: dict[str, Any] = {column.key: getattr(order, column.key) for column in ORDER_COLUMNS}
        row["delivery_address"] = (
            None if order.delivery_address is None else msgspec.to_builtins(order.delivery_address)
        )
        row["account_id"] = self.account_id
        connection = await self._connection()
        await connection.execute(insert(ORDERS), row)
        await connection.execute(
            insert(LINES),
            [
                {
                    "order_id": order.id,
                    "position": position,
                    "account_id": self.account_id,
                    "product_id": line.product_id,
                    "name": line.name,
                    "qty": line.qty,
                    "modifiers": msgspec.to_builtins(line.modifiers),
                    "notes": line.notes,
                    "unit_price_cents": line.unit_price_cents,
                    "line_discount_cents": line.line_discount_cents,
                    "coupon_cents": line.coupon_cents,
                    "loyalty_cents": line.loyalty_cents,
                    "total_cents": line.total_cents,
                    "created_at": order.created_at,
                    "cancelled": False,
                }
                for position, line in enumerate(order.items)
            ],
        )

    async def _announce(self, order: schemas.Order, version: int, *events: str) -> None:
        data = msgspec.to_builtins(order)
        for event in events:
            await self.webhooks.emit(self.session, self.account_id, event, data)
        self.live.order_changed(self.session, self.account_id, order, version)

    async def _locked(self, order_id: str) -> schemas.Order:
        connection = await self._connection()
        found = (
            await connection.execute(LOCKED_ORDER, {"id": order_id, "account": self.account_id})
        ).first()
        if found is None:
            raise order_not_found(order_id)
        lines = await connection.execute(LINES_OF_ORDER, {"id": order_id})
        return order_of(found, [line_of(line) for line in lines])

    async def move(self, order_id: str, status: str) -> schemas.Order:
        """Move the order to ``status``: 409 unless :data:`MOVES` allows it."""
        order = await self._locked(order_id)
        if status == order.status:
            return order
        if status not in MOVES[order.status]:
            raise Conflict(f"Order {order_id} is {order.status}; it cannot become {status}")
        now = utcnow()
        changes: dict[str, Any] = {"status": status, "updated_at": now}
        events = [ORDER_UPDATED]
        if status == "cancelled":
            changes["cancelled_at"] = now
            events.append(ORDER_CANCELLED)
            await self._cancel(order)
        elif status == "delivered":
            changes["completed_at"] = now
            changes["points_earned"] = await self._earn_points(order)
            events.append(ORDER_COMPLETED)
        version = await (await self._connection()).scalar(
            update(ORDERS)
            .where(ORDERS.c.id == order_id)
            .values({**changes, "version": ORDERS.c.version + 1})
            .returning(ORDERS.c.version)
        )
        assert version is not None, "the order is locked"
        moved = msgspec.structs.replace(order, **changes)
        await self._announce(moved, version, *events)
        return moved

    async def _cancel(self, order: schemas.Order) -> None:
        """Give back the stock its sale took (not its lines' quantities: a product whose
        stock was not tracked then had none taken), free a single-use coupon, leave the
        lines out of reports."""
        connection = await self._connection()
        taken = await connection.execute(TAKEN_BY_ORDER, {"order": order.id})
        back = {product_id: int(qty) for product_id, qty in taken}
        await self.catalog.move_stock(back, reason="cancellation", order_id=order.id)
        await connection.execute(FREE_COUPON, {"account": self.account_id, "order": order.id})
        await connection.execute(CANCEL_LINES, {"order": order.id})

    async def _earn_points(self, order: schemas.Order) -> int:
        if order.customer_id is None:
            return 0
        points = points_for(order.total_cents, order.currency, self.settings.points_per_unit)
        await (await self._connection()).execute(
            EARN_POINTS, {"customer": order.customer_id, "points": points}
        )
        return points
