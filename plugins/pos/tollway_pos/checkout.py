"""What a cart or an order of some lines costs: the one path ``POST /cart/calculate``
and ``POST /orders`` share, so a calculated cart and the order made from it agree to
the cent.

:func:`quote` checks the lines against the catalog (an unknown or inactive product, or
more than its stock: 400 naming the product; a modifier group that is unknown, given
twice or missing while required, or an option the group lacks: 400 naming the group),
evaluates the coupon and the customer's loyalty tier, and prices the lines with
:func:`tollway_pos.pricing.price`. Where the data comes from (reads without a
transaction for a cart, the order's transaction for an order) is the caller's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy import bindparam, select

from tollway import BadRequest, NotFound, utcnow
from tollway.billing import major
from tollway_pos import schemas
from tollway_pos.models import Coupon, Customer
from tollway_pos.pricing import CouponTerms, Priced, PricedLine, price
from tollway_pos.queries import ACCOUNT, PosReads
from tollway_pos.settings import PosSettings

CouponReason = Literal["unknown", "expired", "used"]

COUPON = select(
    Coupon.id,
    Coupon.code,
    Coupon.kind,
    Coupon.percent_bps,
    Coupon.amount_cents,
    Coupon.expires_at,
    Coupon.single_use,
    Coupon.used_by_order_id,
).where(Coupon.account_id == ACCOUNT, Coupon.code_key == bindparam("code_key"))
"""A store's coupon by its code, ignoring case (``code_key``: upper case)."""
CUSTOMER_POINTS = select(Customer.loyalty_points).where(
    Customer.id == bindparam("id"), Customer.account_id == ACCOUNT
)


@dataclass(frozen=True, slots=True)
class StoredCoupon:
    """A coupon as the store keeps it."""

    id: str
    code: str
    kind: Literal["percent", "fixed"]
    percent_bps: int
    amount_cents: int
    expires_at: datetime | None
    single_use: bool
    used: bool

    @classmethod
    def of(cls, row: Sequence[Any]) -> StoredCoupon:
        """A row of :data:`COUPON`."""
        coupon_id, code, kind, percent_bps, amount_cents, expires_at, single_use, used_by = row
        return cls(
            coupon_id,
            code,
            cast(Literal["percent", "fixed"], kind),
            percent_bps,
            amount_cents,
            expires_at,
            bool(single_use),
            used_by is not None,
        )

    def reason_refused(self, now: datetime) -> CouponReason | None:
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        if self.single_use and self.used:
            return "used"
        return None

    def terms(self) -> CouponTerms:
        return CouponTerms(
            code=self.code,
            kind=self.kind,
            percent_bps=self.percent_bps,
            amount_cents=self.amount_cents,
        )


def customer_not_found(customer_id: str) -> NotFound:
    return NotFound(f"Customer {customer_id} not found")


def coupon_check(
    code: str, coupon: StoredCoupon | None, reason: CouponReason | None, currency: str
) -> schemas.CouponCheck:
    """What a cart says of its coupon code."""
    if coupon is None:
        return schemas.CouponCheck(code, False, None, None, "unknown")
    value = (
        coupon.percent_bps / 100
        if coupon.kind == "percent"
        else major(coupon.amount_cents, currency)
    )
    return schemas.CouponCheck(coupon.code, reason is None, coupon.kind, value, reason)


def coupon_label(coupon: StoredCoupon, currency: str) -> str:
    """``10% off (SAVE10)``, ``5.00 off (FIVE)``."""
    if coupon.kind == "percent":
        return f"{coupon.percent_bps / 100:g}% off ({coupon.code})"
    return f"{major(coupon.amount_cents, currency):.2f} off ({coupon.code})"


def _chosen_options(product: schemas.Product, choices: Sequence[schemas.ModifierChoice]) -> int:
    """The surcharge per unit of ``choices`` on ``product``, or 400 naming the group."""
    groups = {group.group: group for group in product.modifiers}
    picked: Counter[str] = Counter()
    surcharge = 0
    seen: set[tuple[str, str]] = set()
    for choice in choices:
        group = groups.get(choice.group)
        if group is None:
            raise BadRequest(f"Product {product.id} has no modifier group {choice.group!r}")
        if choice.option not in group.options:
            raise BadRequest(
                f"{choice.option!r} is not an option of modifier group {choice.group!r}"
            )
        if (choice.group, choice.option) in seen:
            raise BadRequest(f"Option {choice.option!r} of group {choice.group!r} is given twice")
        seen.add((choice.group, choice.option))
        picked[choice.group] += 1
        if picked[choice.group] > 1 and not group.multiple:
            raise BadRequest(f"Modifier group {choice.group!r} takes one option")
        surcharge += group.prices.get(choice.option, 0)
    for group in product.modifiers:
        if group.required and not picked[group.group]:
            raise BadRequest(f"Modifier group {group.group!r} is required for product {product.id}")
    return surcharge


def priced_lines(
    items: Sequence[schemas.LineInput], products: dict[str, schemas.Product]
) -> list[PricedLine]:
    """The lines to price, checked against the catalog (``products``: the lines'
    products found in the store)."""
    wanted: Counter[str] = Counter()
    lines: list[PricedLine] = []
    for item in items:
        product = products.get(item.product_id)
        if product is None or not product.is_active:
            raise BadRequest(f"Product {item.product_id} not found")
        wanted[product.id] += item.qty
        if product.stock_qty is not None and wanted[product.id] > product.stock_qty:
            raise BadRequest(
                f"Product {product.id} is out of stock: {product.stock_qty} left, "
                f"{wanted[product.id]} wanted"
            )
        lines.append(
            PricedLine(
                product_id=product.id,
                name=product.name,
                qty=item.qty,
                base_price_cents=product.price_cents,
                modifier_cents=_chosen_options(product, item.modifiers),
                discount_bps=product.discount_bps,
            )
        )
    return lines


def quote(
    items: Sequence[schemas.LineInput],
    products: dict[str, schemas.Product],
    *,
    coupon: StoredCoupon | None,
    loyalty_points: int | None,
    delivery_fee_cents: int,
    settings: PosSettings,
) -> Priced:
    """The price of ``items``; ``coupon`` only when it is valid now, ``loyalty_points``
    the customer's (``None``: no customer)."""
    loyalty = 0 if loyalty_points is None else settings.tier(loyalty_points).discount_bps
    return price(
        priced_lines(items, products),
        coupon=None if coupon is None else coupon.terms(),
        loyalty_bps=loyalty,
        tax_bps=settings.tax_bps,
        delivery_fee_cents=delivery_fee_cents,
    )


def wire_lines(items: Sequence[schemas.LineInput], priced: Priced) -> list[schemas.Line]:
    return [
        schemas.Line(
            product_id=line.product_id,
            name=line.name,
            qty=line.qty,
            modifiers=list(item.modifiers),
            notes=item.notes,
            unit_price_cents=line.unit_price_cents,
            line_discount_cents=line.line_discount_cents,
            coupon_cents=line.coupon_cents,
            loyalty_cents=line.loyalty_cents,
            total_cents=line.total_cents,
        )
        for item, line in zip(items, priced.lines, strict=True)
    ]


async def calculate(
    pos_reads: PosReads, data: schemas.CartRequest, settings: PosSettings
) -> schemas.Cart:
    """``POST /cart/calculate``: what an order of these lines would cost now, read
    without a transaction; an unusable coupon is ``coupon.valid=false``, not an error."""
    reads, account_id = pos_reads.reads, pos_reads.account_id
    points = None
    if data.customer_id is not None:
        points = await reads.scalar(CUSTOMER_POINTS, id=data.customer_id, account_id=account_id)
        if points is None:
            raise customer_not_found(data.customer_id)
    coupon = check = None
    label: str | None = None
    if data.coupon_code is not None:
        stored = await reads.first(
            COUPON,
            lambda *row: StoredCoupon.of(row),
            code_key=data.coupon_code.upper(),
            account_id=account_id,
        )
        reason = "unknown" if stored is None else stored.reason_refused(utcnow())
        check = coupon_check(data.coupon_code, stored, reason, settings.currency)
        if stored is not None and reason is None:
            coupon, label = stored, coupon_label(stored, settings.currency)
    products = await pos_reads.products_by_id({item.product_id for item in data.items})
    priced = quote(
        data.items,
        products,
        coupon=coupon,
        loyalty_points=points,
        delivery_fee_cents=data.delivery_fee_cents,
        settings=settings,
    )
    return schemas.Cart(
        items=wire_lines(data.items, priced),
        subtotal_cents=priced.subtotal_cents,
        discount_cents=priced.coupon_cents,
        discount_label=label,
        loyalty_discount=major(priced.loyalty_cents, settings.currency),
        loyalty_discount_cents=priced.loyalty_cents,
        tax_cents=priced.tax_cents,
        delivery_fee_cents=priced.delivery_fee_cents,
        total_cents=priced.total_cents,
        currency=settings.currency,
        coupon=check,
    )
