"""A store's catalog and stock, written in one transaction: categories, products,
stock adjustments and coupons.

Every stock change goes through :meth:`Catalog.move_stock`: one conditional ``UPDATE``
that refuses to take stock below zero (so concurrent writers never oversell), a row of
``pos_stock_movements`` saying why, ``inventory.low_stock`` when the quantity crosses
down to the threshold (once: later sales leave it at or below, and do not cross it
again), and the live inventory stream's update once the transaction commits.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

import msgspec
from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import BadRequest, Conflict, WebhookEngine, utcnow
from tollway_pos import schemas
from tollway_pos.live import Live
from tollway_pos.models import Category, Coupon, Product, StockMovement
from tollway_pos.product import LOW_STOCK
from tollway_pos.queries import (
    PRODUCT_COLUMNS,
    inventory_item,
    product_not_found,
    product_row,
)
from tollway_pos.settings import PosSettings

_ALPHABET = string.ascii_letters + string.digits
ID_CHARACTERS = 16

PRODUCTS = cast(Table, Product.__table__)
MOVEMENTS = cast(Table, StockMovement.__table__)
INSERT_PRODUCT = insert(PRODUCTS).returning(*PRODUCT_COLUMNS)
_PRODUCT = (PRODUCTS.c.id == bindparam("p_id"), PRODUCTS.c.account_id == bindparam("p_account"))
TAKE_STOCK = (
    update(PRODUCTS)
    .where(
        *_PRODUCT,
        PRODUCTS.c.stock_qty.is_not(None),
        PRODUCTS.c.stock_qty + bindparam("p_delta") >= 0,
    )
    .values(
        stock_qty=PRODUCTS.c.stock_qty + bindparam("p_delta"),
        updated_at=bindparam("p_now"),
        version=PRODUCTS.c.version + 1,
    )
    .returning(
        PRODUCTS.c.name,
        PRODUCTS.c.stock_qty,
        PRODUCTS.c.low_stock_threshold,
        PRODUCTS.c.unit,
        PRODUCTS.c.version,
    )
)
"""A tracked product's stock moved by ``p_delta``, unless that takes it below zero:
the check and the change are one statement, so concurrent orders never oversell."""
STOCK_OF = select(PRODUCTS.c.stock_qty).where(*_PRODUCT)


def new_id(prefix: str) -> str:
    """A public id: ``prefix``, ``_`` and 16 random base-62 characters."""
    return f"{prefix}_" + "".join(secrets.choice(_ALPHABET) for _ in range(ID_CHARACTERS))


def check_modifiers(groups: Sequence[schemas.ModifierGroup]) -> list[dict[str, Any]]:
    """The groups as stored, or 400: a group named twice, an option listed twice, a
    price for an option the group does not have."""
    seen: set[str] = set()
    for group in groups:
        if group.group in seen:
            raise BadRequest(f"Modifier group {group.group!r} is listed twice")
        seen.add(group.group)
        if len(set(group.options)) != len(group.options):
            raise BadRequest(f"Modifier group {group.group!r} lists an option twice")
        unknown = set(group.prices) - set(group.options)
        if unknown:
            option = sorted(unknown)[0]
            raise BadRequest(f"Modifier group {group.group!r} prices {option!r}: not an option")
    return cast(list[dict[str, Any]], msgspec.to_builtins(list(groups)))


def color(given: str | None) -> str | None:
    """A category's colour as stored: ``#rrggbb`` in lower case."""
    return None if given is None else given.lower()


def _tags(tags: Sequence[str]) -> list[str]:
    """Kept once each, without surrounding whitespace, in the order first given."""
    return list(dict.fromkeys(tag.strip() for tag in tags))


class Catalog:
    """One store's catalog, in ``session``'s transaction."""

    def __init__(
        self,
        session: AsyncSession,
        account_id: int,
        settings: PosSettings,
        webhooks: WebhookEngine,
        live: Live,
    ) -> None:
        self.session = session
        self.account_id = account_id
        self.settings = settings
        self.webhooks = webhooks
        self.live = live

    async def _check_category(self, category_id: str | None) -> None:
        if category_id is None:
            return
        found = await self.session.scalar(
            select(Category.id).where(
                Category.id == category_id, Category.account_id == self.account_id
            )
        )
        if found is None:
            raise BadRequest(f"Category {category_id} not found")

    async def create_category(self, data: schemas.CategoryCreate) -> schemas.Category:
        category = Category(
            id=new_id("cat"),
            account_id=self.account_id,
            name=data.name.strip(),
            icon=data.icon,
            color=color(data.color),
            sort_order=data.sort_order,
            created_at=utcnow(),
        )
        self.session.add(category)
        await self.session.flush()
        return schemas.Category(
            category.id, category.name, category.icon, category.color, category.sort_order
        )

    async def create_product(self, data: schemas.ProductCreate) -> schemas.Product:
        await self._check_category(data.category_id)
        now = utcnow()
        threshold = data.low_stock_threshold
        connection = await self.session.connection()
        [row] = await connection.execute(
            INSERT_PRODUCT,
            {
                "id": new_id("prod"),
                "account_id": self.account_id,
                "category_id": data.category_id,
                "name": data.name.strip(),
                "description": data.description,
                "price_cents": data.price_cents,
                "discount_bps": data.discount_bps,
                "image_url": data.image_url,
                "stock_qty": data.stock_qty,
                "low_stock_threshold": (
                    self.settings.low_stock_threshold if threshold is None else threshold
                ),
                "unit": data.unit.strip(),
                "prep_minutes": data.prep_minutes,
                "modifiers": check_modifiers(data.modifiers),
                "tags": _tags(data.tags),
                "is_active": data.is_active,
                "created_at": now,
                "updated_at": now,
            },
        )
        product = product_row(self.settings.currency, row)
        if product.stock_qty is not None:
            await connection.execute(
                insert(MOVEMENTS),
                {
                    "account_id": self.account_id,
                    "product_id": product.id,
                    "delta": product.stock_qty,
                    "qty_after": product.stock_qty,
                    "reason": "initial count",
                    "order_id": None,
                    "created_at": now,
                },
            )
            self.live.stock_changed(self.session, self.account_id, _item(product), 1)
        return product

    async def update_product(self, product_id: str, data: schemas.ProductUpdate) -> schemas.Product:
        """Only the given fields change; ``updated_at`` moves only on a real change."""
        given = {
            name: value
            for name, value in msgspec.structs.asdict(data).items()
            if value is not msgspec.UNSET
        }
        if "category_id" in given:
            await self._check_category(given["category_id"])
        if "modifiers" in given:
            given["modifiers"] = check_modifiers(data.modifiers)  # type: ignore[arg-type]
        if "tags" in given:
            given["tags"] = _tags(given["tags"])
        for name in ("name", "unit"):
            if name in given:
                given[name] = given[name].strip()
        current = await self._locked_product(product_id)
        changed = {name: value for name, value in given.items() if current[name] != value}
        if not changed:
            return await self._product(product_id)
        version = await self.session.scalar(
            update(Product)
            .where(Product.id == product_id, Product.account_id == self.account_id)
            .values({**changed, "updated_at": utcnow(), "version": Product.version + 1})
            .returning(Product.version)
        )
        product = await self._product(product_id)
        if product.stock_qty is not None and {"name", "unit", "low_stock_threshold"} & set(changed):
            assert version is not None, "the product is locked"
            self.live.stock_changed(self.session, self.account_id, _item(product), version)
        return product

    async def _locked_product(self, product_id: str) -> dict[str, Any]:
        """The product's stored values (JSON decoded), its row locked."""
        found = (
            await self.session.execute(
                select(*PRODUCTS.c)
                .where(Product.id == product_id, Product.account_id == self.account_id)
                .with_for_update()
            )
        ).first()
        if found is None:
            raise product_not_found(product_id)
        return dict(found._mapping)

    async def _product(self, product_id: str) -> schemas.Product:
        found = (
            await self.session.execute(
                select(*PRODUCT_COLUMNS).where(
                    Product.id == product_id, Product.account_id == self.account_id
                )
            )
        ).first()
        if found is None:
            raise product_not_found(product_id)
        return product_row(self.settings.currency, found)

    async def adjust_stock(
        self, product_id: str, data: schemas.StockAdjustment
    ) -> schemas.InventoryItem:
        """``delta`` added or the counted quantity ``set``; 409 below zero. Adjusting a
        product whose stock is not tracked starts tracking it (from 0 for a delta)."""
        if (data.delta is None) == (data.set is None):
            raise BadRequest("Give exactly one of delta and set")
        current = await self._locked_product(product_id)
        qty: int = current["stock_qty"] or 0
        delta = data.delta if data.delta is not None else cast(int, data.set) - qty
        if qty + delta < 0:
            raise Conflict(
                f"Product {product_id} has {qty} in stock; an adjustment of {delta} "
                "would take it below zero"
            )
        reason = data.reason.strip()
        if current["stock_qty"] is None:
            await self.session.execute(
                update(Product)
                .where(Product.id == product_id, Product.account_id == self.account_id)
                .values(stock_qty=0, version=Product.version + 1)
            )
        [item] = await self.move_stock({product_id: delta}, reason=reason)
        return item

    async def move_stock(
        self, deltas: dict[str, int], *, reason: str, order_id: str | None = None
    ) -> list[schemas.InventoryItem]:
        """Add each product's delta to its tracked stock, in id order (so two orders
        never deadlock), or 400 naming the first product whose stock would go below
        zero; untracked products are left as they are. Returns the tracked products'
        items after the change."""
        connection = await self.session.connection()
        now = utcnow()
        moved: list[schemas.InventoryItem] = []
        movements: list[dict[str, Any]] = []
        for product_id in sorted(deltas):
            delta = deltas[product_id]
            where = {"p_id": product_id, "p_account": self.account_id}
            found = (
                await connection.execute(TAKE_STOCK, {**where, "p_delta": delta, "p_now": now})
            ).first()
            if found is None:
                tracked = await connection.scalar(STOCK_OF, where)
                if tracked is None:
                    continue  # not tracked (or not there, which the caller checked)
                raise BadRequest(
                    f"Product {product_id} is out of stock: {tracked} left, {-delta} wanted"
                )
            name, qty, threshold, unit, version = found
            item = inventory_item(product_id, name, qty, threshold, unit)
            moved.append(item)
            movements.append(
                {
                    "account_id": self.account_id,
                    "product_id": product_id,
                    "delta": delta,
                    "qty_after": qty,
                    "reason": reason,
                    "order_id": order_id,
                    "created_at": now,
                }
            )
            if qty - delta > threshold >= qty:
                await self.webhooks.emit(
                    self.session, self.account_id, LOW_STOCK, msgspec.to_builtins(item)
                )
            self.live.stock_changed(self.session, self.account_id, item, version)
        if movements:
            await connection.execute(insert(MOVEMENTS), movements)
        return moved

    async def create_coupon(self, data: schemas.CouponCreate) -> schemas.Coupon:
        if data.type == "percent" and (data.percent_bps is None or data.amount_cents is not None):
            raise BadRequest("A percent coupon takes percent_bps and no amount_cents")
        if data.type == "fixed" and (data.amount_cents is None or data.percent_bps is not None):
            raise BadRequest("A fixed coupon takes amount_cents and no percent_bps")
        coupon = Coupon(
            id=new_id("cpn"),
            account_id=self.account_id,
            code=data.code,
            code_key=data.code.upper(),
            kind=data.type,
            percent_bps=data.percent_bps or 0,
            amount_cents=data.amount_cents or 0,
            expires_at=data.expires_at,
            single_use=data.single_use,
            created_at=utcnow(),
        )
        self.session.add(coupon)
        try:
            await self.session.flush()
        except IntegrityError:
            # The insert is the transaction's only write: rolling it back loses nothing.
            raise Conflict(f"The store already has a coupon {data.code}") from None
        return coupon_view(coupon)


def coupon_view(coupon: Coupon) -> schemas.Coupon:
    percent = coupon.kind == "percent"
    return schemas.Coupon(
        id=coupon.id,
        code=coupon.code,
        type=cast(Any, coupon.kind),
        percent_bps=coupon.percent_bps if percent else None,
        amount_cents=None if percent else coupon.amount_cents,
        expires_at=coupon.expires_at,
        single_use=coupon.single_use,
        used=coupon.used_by_order_id is not None,
        created_at=coupon.created_at,
    )


def _item(product: schemas.Product) -> schemas.InventoryItem:
    assert product.stock_qty is not None
    return inventory_item(
        product.id, product.name, product.stock_qty, product.low_stock_threshold, product.unit
    )


def expired(coupon: Coupon, now: datetime) -> bool:
    return coupon.expires_at is not None and coupon.expires_at <= now
