"""``POST /v1/pos/cart/calculate`` over HTTP: the cart's body worked out by hand, coupons
it cannot use (``valid: false`` with the reason, no discount), that it stores nothing,
and the property the issue asks for: for any catalog, cart, coupon, customer tier, tax
rate and order type, the order placed from a cart agrees with it to the cent."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pos_client import customer, order, pos_client, product, stock_movements
from sqlalchemy import update

from tollway.testing import ProductClient, ProductClientFactory, emitted, subscribe
from tollway_pos.models import Customer
from tollway_pos.product import EVENTS
from tollway_pos.settings import LoyaltyTier, PosSettings

SIZE = {"group": "size", "options": ["S", "L"], "required": True, "prices": {"L": 150}}
LARGE = {"group": "size", "option": "L"}
ADDRESS = {"line1": "1 Main St", "city": "Springfield"}
UNKNOWN = "prod_0000000000000000"
MONEY: tuple[str, ...] = ("items", "subtotal_cents", "discount_cents", "loyalty_discount_cents")
MONEY += ("tax_cents", "delivery_fee_cents", "total_cents", "currency")
"""What an order and the cart it was made from must agree on."""


async def calculate(pos: ProductClient, items: list[Any], expect: int = 200, **fields: Any) -> Any:
    """``POST /cart/calculate`` of ``items``: the cart, or the error's body."""
    body = {"items": items, **fields}
    return await pos.call("POST", "/cart/calculate", json=body, expect=expect)


def priced(
    item: dict[str, Any], qty: int, unit: int, discount: int, coupon: int, loyalty: int
) -> dict[str, Any]:
    """A priced line of ``qty`` of ``item``, without modifiers or notes."""
    return {
        "product_id": item["id"],
        "name": item["name"],
        "qty": qty,
        "modifiers": [],
        "notes": None,
        "unit_price_cents": unit,
        "line_discount_cents": discount,
        "coupon_cents": coupon,
        "loyalty_cents": loyalty,
        "total_cents": unit * qty - discount,
    }


def check(code: str, valid: bool, kind: str | None, value: float | None, reason: str | None) -> Any:
    """A cart's ``coupon``."""
    return {"code": code, "valid": valid, "type": kind, "value": value, "reason": reason}


async def test_a_cart_worked_out_by_hand(product_client: ProductClientFactory) -> None:
    two_percent = [{"name": "member", "min_points": 0, "discount_bps": 200}]
    options = {"tax_bps": 825, "loyalty_tiers": two_percent}
    async with pos_client(product_client, settings=options) as pos:
        burger = await product(pos, modifiers=[SIZE])
        fries = await product(pos, "Fries", price_cents=299, discount_bps=1000)
        coupon = {"code": "SAVE10", "type": "percent", "percent_bps": 1000}
        await pos.call("POST", "/coupons", json=coupon, expect=201)
        ada = await customer(pos)
        body = {
            "items": [
                {"product_id": burger["id"], "qty": 2, "modifiers": [LARGE]},
                {"product_id": fries["id"], "qty": 3, "notes": "extra salt"},
            ],
            "coupon_code": "save10",
            "customer_id": ada["customer"]["id"],
            "delivery_fee_cents": 350,
        }
        cart = await pos.call("POST", "/cart/calculate", json=body)
        # Lines 2 x 1049 = 2098 and 897 - 90 = 807: subtotal 2905. The coupon's 290.5
        # rounds to 290, split 209.44 / 80.56 -> 209 / 81 (largest remainder); 2% of
        # the 2615 left is 52.3 -> 52, split 37.56 / 14.43 -> 38 / 14; 8.25% tax of
        # 2563 is 211.4475 -> 211; plus the 350 fee: 3124.
        assert cart == {
            "items": [
                {**priced(burger, 2, 1049, 0, 209, 38), "modifiers": [LARGE]},
                {**priced(fries, 3, 299, 90, 81, 14), "notes": "extra salt"},
            ],
            "subtotal_cents": 2905,
            "discount_cents": 290,
            "discount_label": "10% off (SAVE10)",
            "loyalty_discount": 0.52,
            "loyalty_discount_cents": 52,
            "tax_cents": 211,
            "delivery_fee_cents": 350,
            "total_cents": 3124,
            "currency": "usd",
            "coupon": check("SAVE10", True, "percent", 10, None),
        }
        del body["coupon_code"]
        plain = await pos.call("POST", "/cart/calculate", json=body)
        assert (plain["coupon"], plain["discount_label"]) == (None, None)
        assert (plain["discount_cents"], plain["subtotal_cents"]) == (0, 2905)


async def test_coupons_a_cart_cannot_use(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        items = [{"product_id": (await product(pos, price_cents=1000))["id"], "qty": 1}]
        past = (datetime.now().astimezone() - timedelta(minutes=1)).isoformat()
        for coupon in (
            {"code": "OLD", "type": "percent", "percent_bps": 1000, "expires_at": past},
            {"code": "ONCE", "type": "fixed", "amount_cents": 250, "single_use": True},
        ):
            await pos.call("POST", "/coupons", json=coupon, expect=201)
        fresh = await calculate(pos, items, coupon_code="once")
        assert fresh["coupon"] == check("ONCE", True, "fixed", 2.5, None)
        assert (fresh["discount_label"], fresh["total_cents"]) == ("2.50 off (ONCE)", 750)
        await order(pos, items, coupon_code="ONCE")
        for code, refused in [
            ("nope", check("nope", False, None, None, "unknown")),
            ("old", check("OLD", False, "percent", 10, "expired")),
            ("ONCE", check("ONCE", False, "fixed", 2.5, "used")),
        ]:
            cart = await calculate(pos, items, coupon_code=code)
            assert cart["coupon"] == refused
            assert (cart["discount_cents"], cart["discount_label"]) == (0, None)
            assert cart["total_cents"] == cart["subtotal_cents"] == 1000
            assert cart["items"][0]["coupon_cents"] == 0


async def test_a_cart_refuses_what_an_order_refuses(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        burger = await product(pos, stock_qty=1, modifiers=[SIZE])
        refusals: list[tuple[dict[str, Any], str]] = [
            ({"qty": 1}, f"Modifier group 'size' is required for product {burger['id']}"),
            (
                {"qty": 2, "modifiers": [{"group": "size", "option": "S"}]},
                f"Product {burger['id']} is out of stock: 1 left, 2 wanted",
            ),
            ({"product_id": UNKNOWN, "qty": 1}, f"Product {UNKNOWN} not found"),
        ]
        for item, detail in refusals:
            line = {"product_id": burger["id"], **item}
            assert await calculate(pos, [line], expect=400) == {"detail": detail}
        nobody = "cus_0000000000000000"
        cheap = [{"product_id": burger["id"], "qty": 1, "modifiers": [LARGE]}]
        refused = await calculate(pos, cheap, 404, customer_id=nobody)
        assert refused == {"detail": f"Customer {nobody} not found"}


async def test_a_cart_stores_nothing(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        await subscribe(pos.gateway, pos.owner.account_id, list(EVENTS))
        burger = await product(pos, stock_qty=3)
        coupon = {"code": "ONCE", "type": "percent", "percent_bps": 5000, "single_use": True}
        await pos.call("POST", "/coupons", json=coupon, expect=201)
        items = [{"product_id": burger["id"], "qty": 3}]
        for _ in range(2):
            cart = await calculate(pos, items, coupon_code="ONCE")
            assert cart["coupon"]["valid"] is True
        assert (await pos.call("GET", "/orders"))["total"] == 0
        assert (await pos.call("GET", f"/products/{burger['id']}/stock"))["qty"] == 3
        assert await stock_movements(pos, burger["id"]) == [(3, 3, "initial count", None)]
        assert await emitted(pos.gateway) == []
        placed = await order(pos, items, coupon_code="ONCE")
        assert (placed["discount_cents"], placed["total_cents"]) == (1348, 1349)


# The property: an order agrees with its cart ------------------------------------------

TIERS = {"bronze": 0, "silver": 500, "gold": 2_000}
"""Each tier's customer and their points."""
_codes = itertools.count(1)


@dataclass(frozen=True)
class Store:
    """One gateway for every example of the property, and a customer in each tier."""

    pos: ProductClient
    customers: dict[str, str]

    def configure(self, **values: Any) -> None:
        """Set the product's settings for one example: the object every request reads
        them from (never between an example's cart and its order)."""
        current = self.pos.gateway.product_settings(PosSettings)
        for name, value in values.items():
            setattr(current, name, value)


async def _customers(pos: ProductClient) -> dict[str, str]:
    """A customer per tier; their points written as delivered orders would."""
    ids = {}
    for tier, points in TIERS.items():
        ids[tier] = (await customer(pos, f"{tier}@example.com"))["customer"]["id"]
        async with pos.gateway.database.transaction() as session:
            await session.execute(
                update(Customer).where(Customer.id == ids[tier]).values(loyalty_points=points)
            )
    return ids


@pytest.fixture
async def store(product_client: ProductClientFactory) -> AsyncIterator[Store]:
    """One :class:`Store` for every example of a test. The app's lifespan runs in a
    task of its own: pytest runs a fixture's setup and teardown in different tasks, and
    a lifespan must end in the task it began in."""
    opened: asyncio.Future[Store] = asyncio.get_running_loop().create_future()
    done = asyncio.Event()

    async def serve() -> None:
        async with pos_client(product_client) as pos:
            opened.set_result(Store(pos, await _customers(pos)))
            await done.wait()

    serving = asyncio.create_task(serve())
    either: list[asyncio.Future[Any]] = [opened, serving]
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    if not opened.done():
        await serving  # failed before the app was up: raises why
    try:
        yield opened.result()
    finally:
        done.set()
        await serving


bps = st.sampled_from([0, 0, 1_000, 1_500, 3_333, 10_000]) | st.integers(0, 10_000)
groups = st.lists(
    st.fixed_dictionaries(
        {
            "prices": st.lists(st.integers(0, 500), min_size=1, max_size=3),
            "required": st.booleans(),
            "multiple": st.booleans(),
        }
    ),
    max_size=2,
)
catalog = st.lists(
    st.fixed_dictionaries(
        {
            "price_cents": st.integers(0, 50_000),
            "discount_bps": bps,
            "groups": groups,
            "stock_qty": st.none() | st.just(10_000),
        }
    ),
    min_size=1,
    max_size=4,
)


@st.composite
def choices(draw: st.DrawFn, item: dict[str, Any]) -> list[dict[str, str]]:
    """Options a line of ``item`` may take: one at most of a single-choice group, at
    least one of a required group."""
    chosen = []
    for number, group in enumerate(item["groups"]):
        options = [f"o{index}" for index in range(len(group["prices"]))]
        most = len(options) if group["multiple"] else 1
        least = 1 if group["required"] else 0
        picked = draw(
            st.lists(st.sampled_from(options), min_size=least, max_size=most, unique=True)
        )
        chosen += [{"group": f"g{number}", "option": option} for option in picked]
    return chosen


@st.composite
def examples(draw: st.DrawFn) -> dict[str, Any]:
    """A catalog (``catalog``), a cart's lines of it (``lines``: a product's index, a
    quantity, options), a coupon or none, a customer's tier or none, the tiers'
    discounts, the tax rate, the order type and the store's delivery fee."""
    items = draw(catalog)
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        index = draw(st.integers(0, len(items) - 1))
        qty = draw(st.integers(1, 20))
        lines.append({"index": index, "qty": qty, "modifiers": draw(choices(items[index]))})
    return {
        "catalog": items,
        "lines": lines,
        "coupon": draw(
            st.none()
            | st.fixed_dictionaries({"type": st.just("percent"), "percent_bps": bps.filter(bool)})
            | st.fixed_dictionaries(
                {"type": st.just("fixed"), "amount_cents": st.integers(1, 200_000)}
            )
        ),
        "tier": draw(st.sampled_from([None, *TIERS])),
        "tier_bps": draw(st.lists(bps, min_size=3, max_size=3)),
        "tax_bps": draw(st.sampled_from([0, 825, 1_000]) | st.integers(0, 10_000)),
        "order_type": draw(st.sampled_from(["takeaway", "dine_in", "ecommerce", "delivery"])),
        "fee": draw(st.integers(0, 2_000)),
    }


async def _catalog(pos: ProductClient, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The example's products, created: group ``g<i>`` has options ``o<j>``."""
    created = []
    for number, item in enumerate(items):
        modifiers = [
            {
                "group": f"g{index}",
                "options": [f"o{option}" for option in range(len(group["prices"]))],
                "required": group["required"],
                "multiple": group["multiple"],
                "prices": {f"o{option}": cents for option, cents in enumerate(group["prices"])},
            }
            for index, group in enumerate(item["groups"])
        ]
        fields = {key: item[key] for key in ("price_cents", "discount_bps", "stock_qty")}
        created.append(await product(pos, f"Item {number}", modifiers=modifiers, **fields))
    return created


def _rate(amount: int, rate: int) -> int:
    """``rate`` basis points of ``amount``, an exact half to the even cent (a
    ``Fraction`` rounds exactly, half to even)."""
    return round(Fraction(amount * rate, 10_000))


@settings(
    max_examples=50,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(example=examples())
async def test_an_order_agrees_with_its_cart_to_the_cent(
    store: Store, example: dict[str, Any]
) -> None:
    """The order takes the cart's every amount and line; both follow the pricing
    pipeline (docs/spec-decisions.md, "POS: pricing"), worked out here again."""
    pos = store.pos
    tier_bps = dict(zip(TIERS, example["tier_bps"], strict=True))
    tiers = [
        LoyaltyTier(name=name, min_points=TIERS[name], discount_bps=tier_bps[name])
        for name in TIERS
    ]
    delivery = example["order_type"] == "delivery"
    store.configure(
        tax_bps=example["tax_bps"], delivery_fee_cents=example["fee"], loyalty_tiers=tiers
    )
    products = await _catalog(pos, example["catalog"])
    items = [
        {
            "product_id": products[line["index"]]["id"],
            "qty": line["qty"],
            "modifiers": line["modifiers"],
        }
        for line in example["lines"]
    ]
    wanted: dict[str, Any] = {"items": items}
    if example["coupon"] is not None:
        wanted["coupon_code"] = code = f"C{next(_codes)}"
        await pos.call("POST", "/coupons", json={"code": code, **example["coupon"]}, expect=201)
    if example["tier"] is not None:
        wanted["customer_id"] = store.customers[example["tier"]]
    fee = example["fee"] if delivery else 0
    cart = await pos.call("POST", "/cart/calculate", json={**wanted, "delivery_fee_cents": fee})
    address: dict[str, Any] = {"delivery_address": ADDRESS} if delivery else {}
    placed = await order(pos, order_type=example["order_type"], **wanted, **address)
    assert {name: placed[name] for name in MONEY} == {name: cart[name] for name in MONEY}

    # And both are what the spec's pipeline makes of this example.
    subtotal = 0
    for line, sold in zip(example["lines"], cart["items"], strict=True):
        spec = example["catalog"][line["index"]]
        surcharge = sum(
            spec["groups"][int(choice["group"][1:])]["prices"][int(choice["option"][1:])]
            for choice in line["modifiers"]
        )
        assert sold["unit_price_cents"] == spec["price_cents"] + surcharge
        gross = sold["unit_price_cents"] * line["qty"]
        assert sold["line_discount_cents"] == _rate(gross, spec["discount_bps"])
        assert sold["total_cents"] == gross - sold["line_discount_cents"]
        subtotal += sold["total_cents"]
    coupon = example["coupon"]
    if coupon is None:
        discount = 0
    elif coupon["type"] == "percent":
        discount = _rate(subtotal, coupon["percent_bps"])
    else:
        discount = min(coupon["amount_cents"], subtotal)
    tier = example["tier"]
    loyalty = _rate(subtotal - discount, 0 if tier is None else tier_bps[tier])
    tax = _rate(subtotal - discount - loyalty, example["tax_bps"])
    assert (cart["subtotal_cents"], cart["discount_cents"]) == (subtotal, discount)
    assert (cart["loyalty_discount_cents"], cart["tax_cents"]) == (loyalty, tax)
    assert cart["delivery_fee_cents"] == fee
    assert cart["total_cents"] == subtotal - discount - loyalty + tax + fee
    assert sum(sold["coupon_cents"] for sold in cart["items"]) == discount
    assert sum(sold["loyalty_cents"] for sold in cart["items"]) == loyalty
