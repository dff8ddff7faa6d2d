"""HTTP handlers of the point of sale API (``/v1/pos``), but the live streams'
(:mod:`tollway_pos.streams`).

Reading handlers receive ``pos_reads``, the caller's store read without a transaction;
writing ones a service on the request's transaction (``catalog``, ``orders``), which
commits after the answer is made. Another store's product, order or customer is a 404,
like an unknown one. Customer routes take the store's key and an ``X-Customer-Token``
(the kit's ``Access(customer=True)``); reports never take a customer's token: they are
back office only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from datetime import timedelta
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from litestar import Request, get, patch, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, PathParameter, QueryParameter
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import (
    Access,
    BadRequest,
    CurrentCaller,
    CurrentCustomer,
    CurrentGateway,
    Forbidden,
    Reads,
)
from tollway_pos import schemas
from tollway_pos.catalog import Catalog
from tollway_pos.checkout import calculate
from tollway_pos.customers import Customers
from tollway_pos.live import Live
from tollway_pos.orders import Orders
from tollway_pos.product import (
    CATALOG_READ,
    CATALOG_WRITE,
    CUSTOMERS_READ,
    CUSTOMERS_WRITE,
    EVENTS,
    INVENTORY_READ,
    INVENTORY_WRITE,
    ORDERS_READ,
    ORDERS_WRITE,
    PRODUCT,
    REPORTS_READ,
    WEBHOOKS_WRITE,
)
from tollway_pos.queries import PosReads, day_start
from tollway_pos.reports import daily_summary, sales_report
from tollway_pos.settings import PosSettings

MAX_REPORT_DAYS = 1_830
"""About five years of days in one report."""
FIRST_YEAR, LAST_YEAR = 1970, 9000
"""The years a date parameter may name: no order is older, and the day after the last
one still has a UTC instant in every zone."""
CUSTOMER_HEADER = "X-Customer-Token"


def _id(prefix: str, what: str) -> PathParameter:
    return PathParameter(pattern=f"^{prefix}_[0-9A-Za-z]{{16}}$", description=f"The {what}'s id.")


ProductId = Annotated[str, _id("prod", "product")]
OrderId = Annotated[str, _id("ord", "order")]
DATE = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


def _day(value: str, name: str) -> dt.date:
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        raise BadRequest(f"{name} is not a date (YYYY-MM-DD): {value}") from None
    if not FIRST_YEAR <= day.year <= LAST_YEAR:
        raise BadRequest(f"{name} must be in the years {FIRST_YEAR} to {LAST_YEAR}: {value}")
    return day


def provide_settings(gateway: CurrentGateway) -> PosSettings:
    """The product's settings (``settings``)."""
    return gateway.product_settings(PosSettings)


def provide_pos_reads(
    reads: NamedDependency[Reads], caller: CurrentCaller, gateway: CurrentGateway
) -> PosReads:
    """The caller's store for reading (``pos_reads``): no transaction."""
    return PosReads.of_store(reads, caller.principal.account_id, gateway)


def provide_catalog(
    transaction: NamedDependency[AsyncSession],
    caller: CurrentCaller,
    gateway: CurrentGateway,
    live: NamedDependency[Live],
) -> Catalog:
    """The caller's store's catalog, on the request's transaction (``catalog``)."""
    return Catalog(
        transaction,
        caller.principal.account_id,
        gateway.product_settings(PosSettings),
        gateway.webhooks,
        live,
    )


def provide_orders(catalog: NamedDependency[Catalog]) -> Orders:
    """The caller's store's orders, on the request's transaction (``orders``)."""
    return Orders(catalog)


async def provide_customers(
    pos_reads: NamedDependency[PosReads], gateway: CurrentGateway
) -> Customers:
    return Customers(
        pos_reads, await gateway.customer_tokens(), gateway.product_settings(PosSettings)
    )


# Catalog --------------------------------------------------------------------------------


@get("/categories", scope=CATALOG_READ)
async def list_categories(pos_reads: NamedDependency[PosReads]) -> schemas.Categories:
    """Ordered by ``sort_order``, then name."""
    return schemas.Categories(await pos_reads.categories())


@post("/categories", scope=CATALOG_WRITE)
async def create_category(
    data: JSONBody[schemas.CategoryCreate], catalog: NamedDependency[Catalog]
) -> schemas.Category:
    return await catalog.create_category(data)


@get("/products", scope=CATALOG_READ)
async def list_products(
    pos_reads: NamedDependency[PosReads],
    category_id: Annotated[
        str | None, QueryParameter(pattern="^cat_[0-9A-Za-z]{16}$", description="A category's id.")
    ] = None,
    search: Annotated[
        str | None,
        QueryParameter(min_length=1, max_length=200, description="Words of name or description."),
    ] = None,
    in_stock: Annotated[
        bool | None, QueryParameter(description="true: stock above 0; false: none left.")
    ] = None,
    limit: Annotated[int, QueryParameter(ge=1, le=200, description="1-200.")] = 50,
    offset: Annotated[int, QueryParameter(ge=0, le=10_000_000, description="Skipped.")] = 0,
) -> schemas.Products:
    """Active products, by name."""
    products, total = await pos_reads.products(
        category_id=category_id, search=search, in_stock=in_stock, offset=offset, limit=limit
    )
    return schemas.Products(products, total, offset)


@get("/products/{product_id:str}", scope=CATALOG_READ)
async def get_product(
    product_id: ProductId, pos_reads: NamedDependency[PosReads]
) -> schemas.Product:
    return await pos_reads.product(product_id)


@post("/products", scope=CATALOG_WRITE)
async def create_product(
    data: JSONBody[schemas.ProductCreate], catalog: NamedDependency[Catalog]
) -> schemas.Product:
    return await catalog.create_product(data)


@patch("/products/{product_id:str}", scope=CATALOG_WRITE)
async def update_product(
    product_id: ProductId,
    data: JSONBody[schemas.ProductUpdate],
    catalog: NamedDependency[Catalog],
) -> schemas.Product:
    return await catalog.update_product(product_id, data)


@get("/products/{product_id:str}/stock", scope=CATALOG_READ)
async def get_stock(product_id: ProductId, pos_reads: NamedDependency[PosReads]) -> schemas.Stock:
    return await pos_reads.stock(product_id)


@post("/coupons", scope=CATALOG_WRITE)
async def create_coupon(
    data: JSONBody[schemas.CouponCreate], catalog: NamedDependency[Catalog]
) -> schemas.Coupon:
    return await catalog.create_coupon(data)


# Inventory ------------------------------------------------------------------------------


@get("/inventory", scope=INVENTORY_READ)
async def list_inventory(
    pos_reads: NamedDependency[PosReads],
    low_stock_only: Annotated[
        bool, QueryParameter(description="Only items at or below their threshold.")
    ] = False,
    out_of_stock: Annotated[bool, QueryParameter(description="Only items with none left.")] = False,
) -> schemas.Inventory:
    """The products whose stock is tracked, by name."""
    return schemas.Inventory(
        await pos_reads.inventory(low_stock_only=low_stock_only, out_of_stock=out_of_stock)
    )


@get("/inventory/{product_id:str}", scope=INVENTORY_READ)
async def get_inventory_item(
    product_id: ProductId, pos_reads: NamedDependency[PosReads]
) -> schemas.InventoryItem:
    return await pos_reads.inventory_item(product_id)


@post("/inventory/{product_id:str}/adjustments", scope=INVENTORY_WRITE, status_code=200)
async def adjust_stock(
    product_id: ProductId,
    data: JSONBody[schemas.StockAdjustment],
    catalog: NamedDependency[Catalog],
) -> schemas.InventoryItem:
    """The item after the change."""
    return await catalog.adjust_stock(product_id, data)


# Customers ------------------------------------------------------------------------------


@post("/customers/register", scope=CUSTOMERS_WRITE, idempotent=True)
async def register_customer(
    data: JSONBody[schemas.CustomerRegister],
    customers: NamedDependency[Customers],
    transaction: NamedDependency[AsyncSession],
) -> schemas.SignedIn:
    return await customers.register(transaction, data)


@post("/customers/login", scope=CUSTOMERS_WRITE, status_code=200)
async def login_customer(
    data: JSONBody[schemas.CustomerLogin], customers: NamedDependency[Customers]
) -> schemas.SignedIn:
    return await customers.login(data)


@get("/customers/me", access=Access(scope=CUSTOMERS_READ, customer=True))
async def current_customer(
    customer: CurrentCustomer, customers: NamedDependency[Customers]
) -> schemas.CustomerProfile:
    return schemas.CustomerProfile(await customers.profile(customer))


@get("/customers/me/orders", access=Access(scope=CUSTOMERS_READ, customer=True))
async def customer_orders(
    customer: CurrentCustomer,
    pos_reads: NamedDependency[PosReads],
    limit: Annotated[int, QueryParameter(ge=1, le=200, description="1-200.")] = 20,
    status: Annotated[
        schemas.OrderStatus | None, QueryParameter(description="Only orders in this status.")
    ] = None,
) -> schemas.CustomerOrders:
    """The signed-in customer's orders, most recent first."""
    return schemas.CustomerOrders(
        await pos_reads.customer_orders(customer.id, status=status, limit=limit)
    )


# Orders and carts -----------------------------------------------------------------------


@post("/cart/calculate", scope=ORDERS_WRITE, status_code=200)
async def calculate_cart(
    data: JSONBody[schemas.CartRequest],
    pos_reads: NamedDependency[PosReads],
    settings: NamedDependency[PosSettings],
) -> schemas.Cart:
    """What an order of these lines would cost now; stores nothing."""
    return await calculate(pos_reads, data, settings)


@post("/orders", scope=ORDERS_WRITE, idempotent=True)
async def place_order(
    request: Request[Any, Any, Any],
    data: JSONBody[schemas.OrderCreate],
    orders: NamedDependency[Orders],
    caller: CurrentCaller,
    gateway: CurrentGateway,
) -> schemas.OrderEnvelope:
    """Placed ``pending``, its stock taken; with an ``X-Customer-Token`` (optional
    here: a till places orders without one) the order is the signed-in customer's."""
    token = request.headers.get(CUSTOMER_HEADER)
    signed_in = None
    if token is not None:
        tokens = await gateway.customer_tokens()
        account_id = caller.principal.account_id
        signed_in = tokens.verify(token, account_id=account_id, product=PRODUCT.name).id
    return schemas.OrderEnvelope(await orders.place(data, signed_in))


@get("/orders/{order_id:str}", scope=ORDERS_READ)
async def get_order(
    order_id: OrderId, pos_reads: NamedDependency[PosReads]
) -> schemas.OrderEnvelope:
    return schemas.OrderEnvelope(await pos_reads.order(order_id))


@get("/orders", scope=ORDERS_READ)
async def list_orders(
    pos_reads: NamedDependency[PosReads],
    settings: NamedDependency[PosSettings],
    status: Annotated[
        schemas.OrderStatus | None, QueryParameter(description="Only orders in this status.")
    ] = None,
    date_from: Annotated[
        str | None, QueryParameter(pattern=DATE, description="From this day (the store's).")
    ] = None,
    date_to: Annotated[
        str | None, QueryParameter(pattern=DATE, description="Up to this day, included.")
    ] = None,
    limit: Annotated[int, QueryParameter(ge=1, le=200, description="1-200.")] = 50,
    offset: Annotated[int, QueryParameter(ge=0, le=10_000_000, description="Skipped.")] = 0,
) -> schemas.Orders:
    """Newest first; days are the store's (its ``timezone``)."""
    zone = ZoneInfo(settings.timezone)
    first = None if date_from is None else _day(date_from, "date_from")
    last = None if date_to is None else _day(date_to, "date_to")
    if first is not None and last is not None and last < first:
        raise BadRequest("date_to is before date_from")
    since = None if first is None else day_start(first, zone)
    until = None if last is None else day_start(last + timedelta(days=1), zone)
    orders, total = await pos_reads.orders(
        status=status, since=since, until=until, offset=offset, limit=limit
    )
    return schemas.Orders(orders, total, offset)


@patch("/orders/{order_id:str}", scope=ORDERS_WRITE)
async def move_order(
    order_id: OrderId, data: JSONBody[schemas.OrderUpdate], orders: NamedDependency[Orders]
) -> schemas.OrderEnvelope:
    """The next status; 409 for a move the status flow does not allow."""
    return schemas.OrderEnvelope(await orders.move(order_id, data.status))


# Reports --------------------------------------------------------------------------------


def _back_office(request: Request[Any, Any, Any]) -> None:
    """403 for a request acting for a customer: reports are never a customer app's."""
    if CUSTOMER_HEADER in request.headers:
        raise Forbidden("Reports are back office only: send them no X-Customer-Token")


@get("/reports/sales", scope=REPORTS_READ)
async def get_sales_report(
    request: Request[Any, Any, Any],
    pos_reads: NamedDependency[PosReads],
    settings: NamedDependency[PosSettings],
    date_from: Annotated[str, QueryParameter(pattern=DATE, description="First day, included.")],
    date_to: Annotated[str, QueryParameter(pattern=DATE, description="Last day, included.")],
    group_by: Annotated[schemas.GroupBy, QueryParameter(description="The series' step.")] = "day",
) -> schemas.SalesReport:
    """Orders of the store's days ``date_from`` to ``date_to``, cancelled ones left out."""
    _back_office(request)
    first, last = _day(date_from, "date_from"), _day(date_to, "date_to")
    if last < first:
        raise BadRequest("date_to is before date_from")
    if (last - first).days >= MAX_REPORT_DAYS:
        raise BadRequest(f"A report covers at most {MAX_REPORT_DAYS} days")
    return await sales_report(
        pos_reads.reads,
        pos_reads.account_id,
        date_from=first,
        date_to=last,
        group_by=group_by,
        zone=ZoneInfo(settings.timezone),
        currency=settings.currency,
    )


@get("/reports/daily/{date:str}", scope=REPORTS_READ)
async def get_daily_summary(
    request: Request[Any, Any, Any],
    date: Annotated[str, PathParameter(pattern=DATE, description="The store's day, YYYY-MM-DD.")],
    pos_reads: NamedDependency[PosReads],
    settings: NamedDependency[PosSettings],
) -> schemas.DailySummary:
    _back_office(request)
    return await daily_summary(
        pos_reads.reads,
        pos_reads.account_id,
        day=_day(date, "date"),
        zone=ZoneInfo(settings.timezone),
        currency=settings.currency,
    )


# Webhooks -------------------------------------------------------------------------------


@post("/webhooks", scope=WEBHOOKS_WRITE)
async def register_webhook(
    data: JSONBody[schemas.WebhookCreate], caller: CurrentCaller, gateway: CurrentGateway
) -> schemas.Webhook:
    """An HTTPS endpoint on the gateway's webhook engine for the store's events; its
    signing secret is in this response only."""
    unknown = sorted(set(data.events) - set(EVENTS))
    if unknown:
        raise BadRequest(f"Not a point of sale event: {unknown[0]}")
    endpoint, secret = await gateway.webhooks.register_endpoint(
        caller.principal.account_id,
        data.url,
        data.events,
        (data.description or "").strip(),
    )
    return schemas.Webhook(
        id=endpoint.id,
        url=endpoint.url,
        events=list(endpoint.events),
        description=endpoint.description,
        is_active=endpoint.is_active,
        disabled_reason=endpoint.disabled_reason,
        created_at=endpoint.created_at,
        secret_prefix=endpoint.secret_prefix,
        secret=secret,
    )


ROUTES = [
    list_categories,
    create_category,
    list_products,
    get_product,
    create_product,
    update_product,
    get_stock,
    create_coupon,
    list_inventory,
    get_inventory_item,
    adjust_stock,
    register_customer,
    login_customer,
    current_customer,
    customer_orders,
    calculate_cart,
    place_order,
    get_order,
    list_orders,
    move_order,
    get_sales_report,
    get_daily_summary,
    register_webhook,
]
DEPENDENCIES: dict[str, Callable[..., Any]] = {
    "settings": provide_settings,
    "pos_reads": provide_pos_reads,
    "catalog": provide_catalog,
    "orders": provide_orders,
    "customers": provide_customers,
    "live": Live,
}
