"""The store of ``bench/pos.py`` and what its database must say: a catalog made for
full-text search and modifiers; after the orders the run placed, the stock they took;
and a calendar year of orders copied into PostgreSQL in bulk, with the report queries
over it timed and checked.

The year's orders are made as the product would have stored them (each line priced
from the catalog: size surcharge, the product's own discount, a coupon's share; the
order's tax and delivery fee from the store's settings below), so the reports have real
sums to add up, and what they must say is tallied on the way: the orders not
cancelled, their revenue, and every order per day of the store.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from typing import Any
from zoneinfo import ZoneInfo

from common import BenchError, log
from sqlalchemy import func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import Gateway
from tollway.db import Database
from tollway_pos.models import Category, Order, OrderLine, Product, StockMovement, Store

# The store's settings in the run's config: its reports' days are New York's.
ZONE = "America/New_York"
TAX_BPS = 825
DELIVERY_FEE_CENTS = 299
BPS = 10_000


# --- the catalog -----------------------------------------------------------------------

STOCK = 10**9
"""Every product's stock at the start: more than any run sells."""

ITEMS = ["Burger", "Pizza", "Salad", "Sandwich", "Pasta", "Soup", "Cake", "Latte", "Tea", "Juice"]
"""A product's kind, and its category's name (plural) by its index."""
STYLES = ["Classic", "Smoky", "Spicy", "Garden", "Royal", "Rustic", "Golden", "Double", "Tiny"]
INGREDIENTS = ["cheese", "tomato", "basil", "onion", "garlic", "mushroom", "pepper", "olive"]
INGREDIENTS += ["lemon", "honey", "ginger", "mint", "chicken", "avocado", "spinach", "walnut"]
SEARCH_WORD = INGREDIENTS[0]
PRODUCT_ID = "prod_bench%011d"
"""Product ``n``'s id (``%`` in Python, ``string.format`` in Lua)."""
SIZES = {"Small": 0, "Medium": 50, "Large": 100}
EXTRAS = {"Extra cheese": 75, "Bacon": 120, "Oat milk": 50, "Extra shot": 60}
MODIFIERS = [
    {
        "group": "Size",
        "options": list(SIZES),
        "required": True,
        "multiple": False,
        "prices": {name: cents for name, cents in SIZES.items() if cents},
    },
    {
        "group": "Extras",
        "options": list(EXTRAS),
        "required": False,
        "multiple": True,
        "prices": EXTRAS,
    },
]


def product_id(index: int) -> str:
    """The id of the store's product ``index`` (from 0)."""
    return PRODUCT_ID % index


def ingredients(index: int) -> list[str]:
    """The three ingredients product ``index``'s description names: each of the 16 is
    in 3 products of 16."""
    return [INGREDIENTS[(3 * index + k) % len(INGREDIENTS)] for k in range(3)]


def search_matches(products: int) -> int:
    """How many of the first ``products`` products the search for ``SEARCH_WORD`` finds."""
    return sum(SEARCH_WORD in ingredients(n) for n in range(products))


async def seed_catalog(session: AsyncSession, account: int, products: int) -> None:
    """The store's categories and ``products`` products (Core inserts)."""
    created = datetime.now(UTC) - timedelta(days=30)
    await session.execute(
        insert(Category.__table__),
        [
            {
                "id": f"cat_bench{n:011d}",
                "account_id": account,
                "name": f"{item}s",
                "icon": None,
                "color": None,
                "sort_order": n,
                "created_at": created,
            }
            for n, item in enumerate(ITEMS)
        ],
    )
    await session.execute(
        insert(Product.__table__), [catalog_row(n, account, created) for n in range(products)]
    )


def catalog_row(n: int, account: int, created: datetime) -> dict[str, Any]:
    """Product ``n`` of the store's catalog."""
    item = ITEMS[n % len(ITEMS)]
    first, second, third = ingredients(n)
    return {
        "id": product_id(n),
        "account_id": account,
        "category_id": f"cat_bench{n % len(ITEMS):011d}",
        "name": f"{STYLES[n // len(ITEMS) % len(STYLES)]} {item} {n + 1}",
        "description": f"{item} with {first}, {second} and {third}, made to order.",
        "price_cents": 300 + 25 * (n % 40),
        "discount_bps": 1_000 if n % 7 == 0 else 0,
        "image_url": None,
        "stock_qty": STOCK,
        "low_stock_threshold": 5,
        "unit": "each",
        "prep_minutes": 5 + n % 15,
        "modifiers": MODIFIERS,
        "tags": [item.lower()],
        "is_active": True,
        "created_at": created,
        "updated_at": created,
        "version": 1,
    }


async def vacuum(database: Database) -> None:
    """On PostgreSQL, the state autovacuum keeps a live database in: statistics and a
    visibility map."""
    if not database.is_sqlite:
        autocommit = database.engine.execution_options(isolation_level="AUTOCOMMIT")
        async with autocommit.connect() as connection:
            await connection.execute(text("VACUUM ANALYZE"))


async def sold(database: Database, account: int) -> tuple[int, int, int, int]:
    """Orders placed, units on their lines, stock taken from the catalog, and units of
    the stock movements, in one statement (one snapshot while orders may still commit):
    the last three are equal unless an update was lost."""
    sums = [
        select(func.count()).where(Order.account_id == account),
        select(func.sum(OrderLine.qty)).where(OrderLine.account_id == account),
        select(func.sum(STOCK - Product.stock_qty)).where(Product.account_id == account),
        select(-func.sum(StockMovement.delta)).where(StockMovement.account_id == account),
    ]
    async with database.transaction() as session:
        found = (await session.execute(select(*(one.scalar_subquery() for one in sums)))).one()
    orders, units, taken, moved = (int(value or 0) for value in found)
    return orders, units, taken, moved


# --- a year of orders ------------------------------------------------------------------

OTHER_STORES = 10
BATCH = 10_000
"""Orders made and copied at a time."""
YEAR_STATUSES = {"delivered": 92, "cancelled": 6, "ready": 1, "preparing": 1}
"""Per 100 orders of the past year."""
VERSIONS = {"delivered": 5, "ready": 4, "preparing": 3, "cancelled": 2}
"""An order's version after the moves to its status."""
ORDER_TYPES = {"dine_in": 40, "takeaway": 35, "delivery": 15, "ecommerce": 10}
LINES_PER_ORDER = (2, 3, 3, 4)
COUPON_EVERY = 10
COUPON_BPS = 500
"""Every 10th order has a 5 % coupon, shared among its lines."""
ORDER_CONSTANTS = {
    "customer_id": None,
    "notes": None,
    "currency": "usd",
    "loyalty_discount_cents": 0,
    "points_earned": 0,
}
LINE_CONSTANTS = {"notes": None, "loyalty_cents": 0}
ADDRESS = json.dumps({"line1": "1 Main Street", "city": "Springfield", "country": "US"})
SUMMARY_DAY = (6, 15)
"""The daily summary's month and day of the year."""
DAILY = "daily summary"
"""The name of the daily summary's query; the others are the sales report's."""
_NEW_STORE = text(
    "INSERT INTO pos_stores (account_id, last_order_number) VALUES (:account_id, 0) "
    "ON CONFLICT (account_id) DO NOTHING"
)


@dataclass
class Year:
    """A calendar year of orders in ``zone`` of products of ``catalog`` (the product
    table's rows), and what the store's reports must say of it."""

    year: int
    zone: ZoneInfo
    catalog: Sequence[dict[str, Any]]
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    kept: int = 0
    """The store's orders not cancelled."""
    revenue: int = 0
    """Their totals."""
    by_day: Counter[date] = field(default_factory=Counter)
    """Every order of the store (cancelled ones too) per day of the store."""
    lines: int = 0
    seconds: float = 0.0
    """How long making and copying them took."""

    @property
    def summary_day(self) -> date:
        return date(self.year, *SUMMARY_DAY)

    def orders(
        self, account: int, numbers: range, first_index: int, tally: bool
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Rows of orders numbered ``numbers`` and of their lines, each placed between
        8:00 and 22:00 on a random day of the year; ``tally``: the store's own."""
        rng, orders, lines = self.rng, [], []
        first = date(self.year, 1, 1)
        days = (date(self.year + 1, 1, 1) - first).days
        for offset, number in enumerate(numbers):
            day = first + timedelta(days=rng.randrange(days))
            placed = clock_time(rng.randrange(8, 22), rng.randrange(60), rng.randrange(60))
            created = datetime.combine(day, placed, self.zone).astimezone(UTC)
            status = rng.choices(list(YEAR_STATUSES), weights=list(YEAR_STATUSES.values()))[0]
            kind = rng.choices(list(ORDER_TYPES), weights=list(ORDER_TYPES.values()))[0]
            order_id = f"ord_y{first_index + offset:015d}"
            coupon = number % COUPON_EVERY == 0
            subtotal = discount = 0
            count = rng.choice(LINES_PER_ORDER)
            for position in range(count):
                line = self.line(order_id, position, account, created, coupon)
                line["cancelled"] = status == "cancelled"
                subtotal += line["total_cents"]
                discount += line["coupon_cents"]
                lines.append(line)
            tax = (subtotal - discount) * TAX_BPS // BPS
            fee = DELIVERY_FEE_CENTS if kind == "delivery" else 0
            total = subtotal - discount + tax + fee
            finished = created + timedelta(minutes=rng.randrange(10, 60))
            orders.append(
                {
                    **ORDER_CONSTANTS,
                    "id": order_id,
                    "account_id": account,
                    "order_number": number,
                    "status": status,
                    "order_type": kind,
                    "table_id": f"T{rng.randrange(1, 21)}" if kind == "dine_in" else None,
                    "delivery_address": ADDRESS if kind == "delivery" else None,
                    "coupon_code": "SAVE5" if coupon else None,
                    "subtotal_cents": subtotal,
                    "discount_cents": discount,
                    "tax_cents": tax,
                    "delivery_fee_cents": fee,
                    "total_cents": total,
                    "estimated_ready": created + timedelta(minutes=15),
                    "created_at": created,
                    "updated_at": finished,
                    "completed_at": finished if status == "delivered" else None,
                    "cancelled_at": finished if status == "cancelled" else None,
                    "version": VERSIONS[status],
                }
            )
            if tally:
                self.by_day[day] += 1
                self.lines += count
                if status != "cancelled":
                    self.kept += 1
                    self.revenue += total
        return orders, lines

    def line(
        self, order_id: str, position: int, account: int, created: datetime, coupon: bool
    ) -> dict[str, Any]:
        """A line of a random product of the catalog in a random size, priced as the
        store prices it."""
        product = self.rng.choice(self.catalog)
        sizes = product["modifiers"][0]
        size = self.rng.choice(sizes["options"])
        qty = self.rng.choice((1, 1, 2))
        unit = product["price_cents"] + sizes["prices"].get(size, 0)
        total = unit * qty - unit * qty * product["discount_bps"] // BPS
        return {
            **LINE_CONSTANTS,
            "order_id": order_id,
            "position": position,
            "account_id": account,
            "product_id": product["id"],
            "name": product["name"],
            "qty": qty,
            "modifiers": json.dumps([{"group": sizes["group"], "option": size}]),
            "unit_price_cents": unit,
            "line_discount_cents": unit * qty - total,
            "coupon_cents": total * COUPON_BPS // BPS if coupon else 0,
            "total_cents": total,
            "created_at": created,
        }


async def copy(session: AsyncSession, model: Any, rows: list[dict[str, Any]]) -> None:
    """``rows`` into ``model``'s table with PostgreSQL's COPY (asyncpg's), in the
    session's transaction."""
    table = model.__table__
    names = [column.name for column in table.columns]
    connection = await (await session.connection()).get_raw_connection()
    await connection.driver_connection.copy_records_to_table(
        table.name, records=[tuple(row[name] for name in names) for row in rows], columns=names
    )


async def reserve_numbers(gateway: Gateway, account: int, count: int) -> int:
    """Take ``count`` order numbers of the store as placing an order takes one (its
    counter row locked, so an order still being placed gets a number before or after
    them); the number before the first."""
    async with gateway.database.transaction() as session:
        await session.execute(_NEW_STORE, {"account_id": account})
        last = await session.scalar(
            update(Store)
            .where(Store.account_id == account)
            .values(last_order_number=Store.last_order_number + count)
            .returning(Store.last_order_number)
        )
    assert last is not None, "the store's row was just made"
    return int(last) - count


async def seed_year(
    gateway: Gateway, account: int, products: int, orders: int, others: int
) -> Year:
    """The store's ``orders`` of last year (in its zone) of its ``products`` products,
    and ``others`` of ten other stores, copied in; the stores' counters moved past them."""
    clock = time.monotonic()
    zone = ZoneInfo(ZONE)
    now = datetime.now(zone)
    catalog = [catalog_row(n, account, now) for n in range(products)]
    year = Year(now.year - 1, zone, catalog)
    stores = [(account, await reserve_numbers(gateway, account, orders), orders)]
    for n in range(OTHER_STORES):
        other = await gateway.accounts.create_account(f"store {n}", {"pos": "business"})
        stores.append((other, 0, others // OTHER_STORES))
    async with gateway.database.transaction() as session:
        await session.execute(
            insert(Store),
            [{"account_id": a, "last_order_number": n} for a, _, n in stores[1:]],
        )
        index = 0
        for store, after, count in stores:
            for start in range(0, count, BATCH):
                numbers = range(after + start + 1, after + min(start + BATCH, count) + 1)
                made, lines = year.orders(store, numbers, index, tally=store == account)
                await copy(session, Order, made)
                await copy(session, OrderLine, lines)
                index += len(numbers)
    year.seconds = time.monotonic() - clock
    return year


def report_queries(prefix: str, year: Year) -> dict[str, str]:
    """The queries timed, by name: the year's sales by day, week and month, and the
    summary of one day."""
    span = f"date_from={year.year}-01-01&date_to={year.year}-12-31"
    queries = {
        f"sales, year by {step}": f"{prefix}/reports/sales?{span}&group_by={step}"
        for step in ("day", "week", "month")
    }
    queries[DAILY] = f"{prefix}/reports/daily/{year.summary_day}"
    return queries


def check_report(name: str, body: dict[str, Any], year: Year) -> None:
    """:class:`BenchError` unless the report says what was seeded (the orders the run
    placed are this year's: none is in last year's reports)."""
    if name == DAILY:
        counted = body["total_orders"] + body["cancelled_orders"]
        if counted != year.by_day[year.summary_day]:
            raise BenchError(
                f"the summary of {year.summary_day} counts {counted} orders, "
                f"not {year.by_day[year.summary_day]}"
            )
        return
    summary = body["summary"]
    if (summary["total_orders"], summary["total_revenue_cents"]) != (year.kept, year.revenue):
        raise BenchError(
            f"{name}: {summary['total_orders']} orders, {summary['total_revenue_cents']} cents; "
            f"seeded {year.kept} not cancelled, {year.revenue} cents"
        )


def time_reports(
    fetch: Callable[[str], Any], prefix: str, year: Year, requests: int
) -> dict[str, list[float]]:
    """Each query's times in ms over ``requests`` sequential requests after two
    warm-ups, ``fetch`` (a path to its decoded JSON body) answering each."""
    timings: dict[str, list[float]] = {}
    for name, path in report_queries(prefix, year).items():
        taken = timings[name] = []
        for attempt in range(requests + 2):
            started = time.perf_counter()
            body = fetch(path)
            if attempt >= 2:
                taken.append((time.perf_counter() - started) * 1000)
        check_report(name, body, year)
        log(f"  {name}: median {statistics.median(taken):.1f} ms")
    return timings
