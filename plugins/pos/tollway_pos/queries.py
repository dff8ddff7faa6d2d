"""The point of sale product's reads: statements built once, run without a transaction
(:class:`tollway.Reads`), rows straight into the wire's Structs.

Every query is filtered by the store (the caller's account), so another store's product,
customer or order is simply not found. Product search is :mod:`tollway_pos.search`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

import msgspec
from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Text,
    bindparam,
    cast,
    or_,
    select,
    true,
)

from tollway import PAGE_LIMIT, PAGE_OFFSET, Gateway, NotFound, Paged, Reads, count_of
from tollway_pos import schemas
from tollway_pos.models import Category, Customer, Order, OrderLine, Product
from tollway_pos.search import matches, search_terms, search_words
from tollway_pos.settings import PosSettings

ACCOUNT: BindParameter[int] = bindparam("account_id")

CATEGORY_COLUMNS = [getattr(Category, name) for name in schemas.Category.__struct_fields__]
CATEGORIES = (
    select(*CATEGORY_COLUMNS)
    .where(Category.account_id == ACCOUNT)
    .order_by(Category.sort_order, Category.name, Category.id)
)
CATEGORY_EXISTS = select(Category.id).where(
    Category.id == bindparam("id"), Category.account_id == ACCOUNT
)

PRODUCT_COLUMNS = [
    Product.id,
    Product.name,
    Product.description,
    Product.price_cents,
    Product.category_id,
    Product.image_url,
    Product.stock_qty,
    Product.low_stock_threshold,
    Product.unit,
    Product.discount_bps,
    Product.prep_minutes,
    cast(Product.modifiers, Text).label("modifiers"),
    cast(Product.tags, Text).label("tags"),
    Product.is_active,
    Product.created_at,
    Product.updated_at,
]
"""A product's columns, its JSON ones as their text: msgspec decodes that straight
into the wire's Structs, where the drivers' JSON decoding and a conversion after it
cost a fifth of a product list's time."""
PRODUCT = select(*PRODUCT_COLUMNS).where(
    Product.id == bindparam("id"), Product.account_id == ACCOUNT
)
PRODUCTS_BY_ID = select(*PRODUCT_COLUMNS).where(
    Product.id.in_(bindparam("ids", expanding=True)), Product.account_id == ACCOUNT
)
_TRACKED = Product.stock_qty.is_not(None)
INVENTORY_COLUMNS = [
    Product.id,
    Product.name,
    Product.stock_qty,
    Product.low_stock_threshold,
    Product.unit,
]
_INVENTORY_ORDER = (Product.name, Product.id)

ORDER_COLUMNS = [
    Order.id,
    Order.order_number,
    Order.status,
    Order.order_type,
    Order.customer_id,
    Order.table_id,
    Order.delivery_address,
    Order.notes,
    Order.coupon_code,
    Order.subtotal_cents,
    Order.discount_cents,
    Order.loyalty_discount_cents,
    Order.tax_cents,
    Order.delivery_fee_cents,
    Order.total_cents,
    Order.currency,
    Order.points_earned,
    Order.estimated_ready,
    Order.created_at,
    Order.updated_at,
    Order.completed_at,
    Order.cancelled_at,
]
LINE_COLUMNS = [
    OrderLine.order_id,
    OrderLine.product_id,
    OrderLine.name,
    OrderLine.qty,
    OrderLine.modifiers,
    OrderLine.notes,
    OrderLine.unit_price_cents,
    OrderLine.line_discount_cents,
    OrderLine.coupon_cents,
    OrderLine.loyalty_cents,
    OrderLine.total_cents,
]
ORDER = select(*ORDER_COLUMNS).where(Order.id == bindparam("id"), Order.account_id == ACCOUNT)
LIVE_ORDER = ORDER.add_columns(Order.version)
"""The order and its version, read together: where its live stream starts."""
LINES = (
    select(*LINE_COLUMNS)
    .where(OrderLine.order_id.in_(bindparam("ids", expanding=True)))
    .order_by(OrderLine.order_id, OrderLine.position)
)
_NEWEST = (Order.created_at.desc(), Order.id.desc())

PROFILE = select(
    Customer.id,
    Customer.email,
    Customer.full_name,
    Customer.phone,
    Customer.loyalty_points,
    Customer.addresses,
    Customer.created_at,
).where(Customer.id == bindparam("id"), Customer.account_id == ACCOUNT)
CUSTOMER_EXISTS = select(Customer.id).where(
    Customer.id == bindparam("id"), Customer.account_id == ACCOUNT
)
CREDENTIALS = select(
    Customer.id, Customer.email, Customer.full_name, Customer.loyalty_points, Customer.password_hash
).where(Customer.email_key == bindparam("email_key"), Customer.account_id == ACCOUNT)


def as_row(*columns: Any) -> tuple[Any, ...]:
    """A row as the tuple of its columns (``Reads``' ``into`` for rows read whole)."""
    return columns


def email_key(email: str) -> str:
    """What uniqueness and sign-in compare: the address without surrounding spaces,
    ignoring case."""
    return email.strip().lower()


@cache
def _product_page(dialect: str, category: bool, in_stock: bool | None, search: bool) -> Paged:
    """Active products by name; the filters each add a condition."""
    conditions: list[ColumnElement[bool]] = [
        Product.account_id == ACCOUNT,
        Product.is_active == true(),
    ]
    if category:
        conditions.append(Product.category_id == bindparam("category_id"))
    if in_stock is True:
        conditions.append(or_(Product.stock_qty.is_(None), Product.stock_qty > 0))
    elif in_stock is False:
        conditions.append(Product.stock_qty <= 0)
    if search:
        conditions.append(matches(dialect))
    page = select(*PRODUCT_COLUMNS).where(*conditions).order_by(Product.name, Product.id)
    return Paged(page.offset(PAGE_OFFSET).limit(PAGE_LIMIT), count_of(Product, *conditions))


@cache
def _inventory(low_stock_only: bool, out_of_stock: bool) -> Any:
    conditions: list[ColumnElement[bool]] = [Product.account_id == ACCOUNT, _TRACKED]
    if low_stock_only:
        conditions.append(Product.stock_qty <= Product.low_stock_threshold)
    if out_of_stock:
        conditions.append(Product.stock_qty <= 0)
    return select(*INVENTORY_COLUMNS).where(*conditions).order_by(*_INVENTORY_ORDER)


LIVE_INVENTORY = _inventory(False, False).add_columns(Product.version)
INVENTORY_ITEM = select(*INVENTORY_COLUMNS).where(
    Product.id == bindparam("id"), Product.account_id == ACCOUNT, _TRACKED
)


@cache
def _order_page(status: bool, since: bool, until: bool) -> Paged:
    conditions: list[ColumnElement[bool]] = [Order.account_id == ACCOUNT]
    if status:
        conditions.append(Order.status == bindparam("status"))
    if since:
        conditions.append(Order.created_at >= bindparam("since"))
    if until:
        conditions.append(Order.created_at < bindparam("until"))
    page = select(*ORDER_COLUMNS).where(*conditions).order_by(*_NEWEST)
    return Paged(page.offset(PAGE_OFFSET).limit(PAGE_LIMIT), count_of(Order, *conditions))


@cache
def _customer_orders(status: bool) -> Any:
    conditions: list[ColumnElement[bool]] = [
        Order.account_id == ACCOUNT,
        Order.customer_id == bindparam("customer_id"),
    ]
    if status:
        conditions.append(Order.status == bindparam("status"))
    return select(*ORDER_COLUMNS).where(*conditions).order_by(*_NEWEST).limit(PAGE_LIMIT)


def inventory_item(
    product_id: str, name: str, qty: int, low_stock_threshold: int, unit: str
) -> schemas.InventoryItem:
    return schemas.InventoryItem(
        product_id, name, qty, low_stock_threshold, qty <= low_stock_threshold, unit
    )


_MODIFIER_GROUPS = msgspec.json.Decoder(list[schemas.ModifierGroup])
_TAGS = msgspec.json.Decoder(list[str])


def product_row(currency: str, row: Sequence[Any]) -> schemas.Product:
    (
        product_id,
        name,
        description,
        price_cents,
        category_id,
        image_url,
        stock_qty,
        threshold,
        unit,
        discount_bps,
        prep_minutes,
        modifiers,
        tags,
        is_active,
        created_at,
        updated_at,
    ) = row
    return schemas.Product(
        id=product_id,
        name=name,
        description=description,
        price_cents=price_cents,
        currency=currency,
        category_id=category_id,
        image_url=image_url,
        in_stock=stock_qty is None or stock_qty > 0,
        stock_qty=stock_qty,
        low_stock_threshold=threshold,
        unit=unit,
        discount_bps=discount_bps,
        prep_minutes=prep_minutes,
        modifiers=_MODIFIER_GROUPS.decode(modifiers),
        tags=_TAGS.decode(tags),
        is_active=bool(is_active),
        created_at=created_at,
        updated_at=updated_at,
    )


def line_of(row: Sequence[Any]) -> schemas.Line:
    """An ``OrderLine`` row of ``LINE_COLUMNS`` (its order id first) as the wire's line."""
    _, product_id, name, qty, modifiers, notes, unit, line_discount, coupon, loyalty, total = row
    return schemas.Line(
        product_id=product_id,
        name=name,
        qty=qty,
        modifiers=msgspec.convert(modifiers or [], list[schemas.ModifierChoice]),
        notes=notes,
        unit_price_cents=unit,
        line_discount_cents=line_discount,
        coupon_cents=coupon,
        loyalty_cents=loyalty,
        total_cents=total,
    )


def order_of(row: Sequence[Any], lines: list[schemas.Line]) -> schemas.Order:
    """An ``Order`` row of ``ORDER_COLUMNS`` with its lines."""
    (order_id, number, status, order_type, customer_id, table_id, address, *rest) = row
    return schemas.Order(
        order_id,
        number,
        status,
        order_type,
        lines,
        customer_id,
        table_id,
        None if address is None else msgspec.convert(address, schemas.DeliveryAddress),
        *rest,
    )


def day_start(day: date, zone: ZoneInfo) -> datetime:
    """The UTC instant the store's ``day`` starts (in ``zone``)."""
    return datetime.combine(day, time(), zone).astimezone(UTC)


def product_not_found(product_id: str) -> NotFound:
    return NotFound(f"Product {product_id} not found")


def order_not_found(order_id: str) -> NotFound:
    return NotFound(f"Order {order_id} not found")


class PosReads:
    """One store's catalog, stock, customers and orders, read without a transaction;
    prices in ``currency``; ``dialect`` chooses the full-text search."""

    def __init__(self, reads: Reads, account_id: int, *, currency: str, dialect: str) -> None:
        self.reads = reads
        self.account_id = account_id
        self.currency = currency
        self.dialect = dialect

    @classmethod
    def of_store(cls, reads: Reads, account_id: int, gateway: Gateway) -> PosReads:
        """Store ``account_id``'s reads on ``gateway``'s currency and database."""
        currency = gateway.product_settings(PosSettings).currency
        return cls(
            reads, account_id, currency=currency, dialect=gateway.database.engine.dialect.name
        )

    def _product(self, *row: Any) -> schemas.Product:
        return product_row(self.currency, row)

    async def categories(self) -> list[schemas.Category]:
        return await self.reads.all(CATEGORIES, schemas.Category, account_id=self.account_id)

    async def category_exists(self, category_id: str) -> bool:
        found = await self.reads.scalar(CATEGORY_EXISTS, id=category_id, account_id=self.account_id)
        return found is not None

    async def product(self, product_id: str) -> schemas.Product:
        found = await self.reads.first(
            PRODUCT, self._product, id=product_id, account_id=self.account_id
        )
        if found is None:
            raise product_not_found(product_id)
        return found

    async def products_by_id(self, ids: Iterable[str]) -> dict[str, schemas.Product]:
        found = await self.reads.all(
            PRODUCTS_BY_ID, self._product, ids=list(ids), account_id=self.account_id
        )
        return {product.id: product for product in found}

    async def products(
        self,
        *,
        category_id: str | None,
        search: str | None,
        in_stock: bool | None,
        offset: int,
        limit: int,
    ) -> tuple[list[schemas.Product], int]:
        """Active products by name, filtered by every filter given."""
        words = search_words(search) if search is not None else []
        if search is not None and not words:
            return [], 0  # nothing in it to search for
        query = _product_page(self.dialect, category_id is not None, in_stock, bool(words))
        return await self.reads.page(
            query,
            self._product,
            account_id=self.account_id,
            category_id=category_id,
            terms=search_terms(words, self.dialect),
            offset=offset,
            limit=limit,
        )

    async def stock(self, product_id: str) -> schemas.Stock:
        product = await self.product(product_id)
        qty, threshold = product.stock_qty, product.low_stock_threshold
        low = qty is not None and qty <= threshold
        return schemas.Stock(product.id, product.in_stock, qty, threshold, low)

    async def inventory(
        self, *, low_stock_only: bool, out_of_stock: bool
    ) -> list[schemas.InventoryItem]:
        return await self.reads.all(
            _inventory(low_stock_only, out_of_stock), inventory_item, account_id=self.account_id
        )

    async def inventory_item(self, product_id: str) -> schemas.InventoryItem:
        found = await self.reads.first(
            INVENTORY_ITEM, inventory_item, id=product_id, account_id=self.account_id
        )
        if found is None:
            raise NotFound(f"Product {product_id} not found or its stock is not tracked")
        return found

    async def _with_lines(self, rows: Sequence[Sequence[Any]]) -> list[schemas.Order]:
        if not rows:
            return []
        lines: dict[str, list[schemas.Line]] = {row[0]: [] for row in rows}
        for line_row in await self.reads.all(LINES, as_row, ids=list(lines)):
            lines[line_row[0]].append(line_of(line_row))
        return [order_of(row, lines[row[0]]) for row in rows]

    async def order(self, order_id: str) -> schemas.Order:
        found = await self.reads.first(ORDER, as_row, id=order_id, account_id=self.account_id)
        if found is None:
            raise order_not_found(order_id)
        [order] = await self._with_lines([found])
        return order

    async def live_order(self, order_id: str) -> tuple[schemas.Order, int]:
        """The order and its version (lines never change once placed)."""
        found = await self.reads.first(LIVE_ORDER, as_row, id=order_id, account_id=self.account_id)
        if found is None:
            raise order_not_found(order_id)
        [order] = await self._with_lines([found[:-1]])
        return order, found[-1]

    async def live_inventory(self) -> tuple[list[schemas.InventoryItem], dict[str, int]]:
        """The inventory and each item's version, read together."""
        rows = await self.reads.all(LIVE_INVENTORY, as_row, account_id=self.account_id)
        items = [inventory_item(*row[:-1]) for row in rows]
        return items, {row[0]: row[-1] for row in rows}

    async def orders(
        self,
        *,
        status: str | None,
        since: datetime | None,
        until: datetime | None,
        offset: int,
        limit: int,
    ) -> tuple[list[schemas.Order], int]:
        """Newest first."""
        query = _order_page(status is not None, since is not None, until is not None)
        rows, total = await self.reads.page(
            query,
            as_row,
            account_id=self.account_id,
            status=status,
            since=since,
            until=until,
            offset=offset,
            limit=limit,
        )
        return await self._with_lines(rows), total

    async def customer_orders(
        self, customer_id: str, *, status: str | None, limit: int
    ) -> list[schemas.Order]:
        rows = await self.reads.all(
            _customer_orders(status is not None),
            as_row,
            account_id=self.account_id,
            customer_id=customer_id,
            status=status,
            limit=limit,
        )
        return await self._with_lines(rows)

    async def customer_exists(self, customer_id: str) -> bool:
        found = await self.reads.scalar(CUSTOMER_EXISTS, id=customer_id, account_id=self.account_id)
        return found is not None

    async def profile_row(self, customer_id: str) -> tuple[Any, ...] | None:
        return await self.reads.first(PROFILE, as_row, id=customer_id, account_id=self.account_id)

    async def credentials(self, email: str) -> tuple[Any, ...] | None:
        return await self.reads.first(
            CREDENTIALS, as_row, email_key=email_key(email), account_id=self.account_id
        )
