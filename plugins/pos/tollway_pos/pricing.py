"""A cart's prices: one pure pipeline in integer cents, shared by quote and order.

``POST /v1/pos/cart/calculate`` and ``POST /v1/pos/orders`` both call :func:`price`,
so a calculated cart and the order made from it agree to the cent. Amounts are
``int`` cents and rates ``int`` basis points (``10000`` bps is 100%): no float ever
enters, because a float cannot hold most decimal fractions and two computations of
"the same" price could then differ by a cent.

The pipeline, in order:

1. A line's unit price is its base price plus its options' surcharges (modifiers);
   its gross is the unit price times its quantity.
2. Its line discount is ``gross * discount_bps / 10000``, rounded half-even; its line
   total is its gross less that discount.
3. The subtotal is the sum of the line totals.
4. A percent coupon takes ``subtotal * percent_bps / 10000``, rounded half-even; a
   fixed one takes its amount, at most the subtotal. The coupon's discount is spread
   over the lines in proportion to their line totals (:func:`allocate`).
5. The loyalty discount is ``(subtotal - coupon) * loyalty_bps / 10000``, rounded
   half-even, spread the same way over what each line has left after its coupon share.
6. The taxable amount is ``subtotal - coupon - loyalty``; the tax is
   ``taxable * tax_bps / 10000``, rounded half-even.
7. The total is ``taxable + tax + delivery fee``.

The total is never below zero without any clamp: no discount exceeds what it applies
to (a line discount is at most 100% of its gross, a fixed coupon is capped at the
subtotal, loyalty applies to what the coupon left), so ``taxable ≥ 0``. So
``total = subtotal - coupon - loyalty + tax + delivery fee`` always holds exactly.

Rounding is half-even ("banker's" rounding, ``decimal.ROUND_HALF_EVEN``) because it
has no bias: over many orders an exact half rounds down as often as up, where
half-up would always favour one side. Cart-wide discounts are allocated to the lines
so that a receipt, a one-line refund or a per-product sales report adds up to the
order's own figures exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

__all__ = [
    "BPS",
    "MAX_TAX_BPS",
    "CouponTerms",
    "LinePrice",
    "Priced",
    "PricedLine",
    "allocate",
    "price",
    "round_half_even",
]

BPS = 10_000
"""Basis points in a whole: a rate of ``BPS`` is 100%."""
MAX_TAX_BPS = 100_000
"""The highest tax rate :func:`price` accepts (1000%), a bound against typos."""


class PricedLine(msgspec.Struct, frozen=True, kw_only=True):
    """One cart line as the catalog prices it, before any cart-wide discount."""

    product_id: str
    name: str
    qty: int
    """At least 1."""
    base_price_cents: int
    modifier_cents: int
    """The sum of the chosen options' surcharges, per unit."""
    discount_bps: int
    """The product's own discount, 0..10000."""


class CouponTerms(msgspec.Struct, frozen=True, kw_only=True):
    """What a coupon takes off: ``percent_bps`` of the subtotal for ``percent``, or
    ``amount_cents`` (at most the subtotal) for ``fixed``; the other field is unused."""

    code: str
    kind: Literal["percent", "fixed"]
    percent_bps: int = 0
    amount_cents: int = 0


class LinePrice(msgspec.Struct, frozen=True, kw_only=True):
    """A priced line: its own figures and its shares of the cart-wide discounts."""

    product_id: str
    name: str
    qty: int
    unit_price_cents: int
    """Base price plus modifiers."""
    gross_cents: int
    """``unit_price_cents * qty``."""
    line_discount_cents: int
    total_cents: int
    """After the product's own discount, before the coupon and loyalty."""
    coupon_cents: int
    loyalty_cents: int


class Priced(msgspec.Struct, frozen=True, kw_only=True):
    """A priced cart; each cart-wide figure is the exact sum of its line shares."""

    lines: tuple[LinePrice, ...]
    subtotal_cents: int
    """The sum of the lines' ``total_cents``."""
    line_discount_cents: int
    """The sum of the lines' own discounts (already out of the subtotal)."""
    coupon_cents: int
    loyalty_cents: int
    taxable_cents: int
    """``subtotal - coupon - loyalty``."""
    tax_cents: int
    delivery_fee_cents: int
    total_cents: int
    """``taxable + tax + delivery fee``."""


def round_half_even(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` rounded to an integer, an exact half to the even
    one; exact for integers of any size, where going through a float would not be."""
    if numerator < 0 or denominator <= 0:
        raise ValueError("round_half_even takes numerator >= 0 and denominator > 0")
    quotient, remainder = divmod(numerator, denominator)
    twice = 2 * remainder
    if twice > denominator or (twice == denominator and quotient % 2 == 1):
        return quotient + 1
    return quotient


def allocate(amount: int, weights: Sequence[int]) -> list[int]:
    """Split ``amount`` over ``weights`` in proportion, by the largest-remainder method.

    Each part starts as the floor of its exact share ``amount * weight / Σweights``;
    the cents this leaves go one each to the parts with the largest fractional
    remainders, ties to the earlier part. So the parts sum to ``amount`` exactly
    (rounding each share on its own would not) and each is within one cent of its
    exact share. A part only rounds up when its exact share is not whole, so when
    ``amount ≤ Σweights`` no part exceeds its weight and a zero weight gets nothing.
    """
    _require("amount", amount, 0)
    for weight in weights:
        _require("weight", weight, 0)
    whole = sum(weights)
    if whole == 0:
        if amount:
            raise ValueError("cannot allocate a positive amount over no weight")
        return [0] * len(weights)
    shares = [divmod(amount * weight, whole) for weight in weights]
    parts = [floor for floor, _ in shares]
    # sorted() is stable: among equal remainders the earlier part comes first.
    by_remainder = sorted(range(len(parts)), key=lambda index: -shares[index][1])
    for index in by_remainder[: amount - sum(parts)]:
        parts[index] += 1
    return parts


def price(
    lines: Sequence[PricedLine],
    *,
    coupon: CouponTerms | None,
    loyalty_bps: int,
    tax_bps: int,
    delivery_fee_cents: int,
) -> Priced:
    """Price a cart by the pipeline in this module's docstring.

    ``loyalty_bps`` is the customer's tier discount (0 without a customer). Arguments
    outside their documented ranges raise ``ValueError`` (``TypeError`` if not an
    ``int``): the routes validate requests first, so this guards against a
    programming error before it becomes a wrong price.
    """
    _require("loyalty_bps", loyalty_bps, 0, BPS)
    _require("tax_bps", tax_bps, 0, MAX_TAX_BPS)
    _require("delivery_fee_cents", delivery_fee_cents, 0)
    for line in lines:
        _require_line(line)
    units = [line.base_price_cents + line.modifier_cents for line in lines]
    grosses = [unit * line.qty for unit, line in zip(units, lines, strict=True)]
    line_discounts = [
        _rate(gross, line.discount_bps) for gross, line in zip(grosses, lines, strict=True)
    ]
    totals = [gross - cut for gross, cut in zip(grosses, line_discounts, strict=True)]
    subtotal = sum(totals)

    coupon_cents = _coupon_discount(coupon, subtotal)
    coupon_shares = allocate(coupon_cents, totals)
    left = [total - share for total, share in zip(totals, coupon_shares, strict=True)]
    loyalty_cents = _rate(subtotal - coupon_cents, loyalty_bps)
    loyalty_shares = allocate(loyalty_cents, left)

    taxable = subtotal - coupon_cents - loyalty_cents
    tax = _rate(taxable, tax_bps)
    priced_lines = tuple(
        LinePrice(
            product_id=line.product_id,
            name=line.name,
            qty=line.qty,
            unit_price_cents=unit,
            gross_cents=gross,
            line_discount_cents=cut,
            total_cents=total,
            coupon_cents=coupon_share,
            loyalty_cents=loyalty_share,
        )
        for line, unit, gross, cut, total, coupon_share, loyalty_share in zip(
            lines,
            units,
            grosses,
            line_discounts,
            totals,
            coupon_shares,
            loyalty_shares,
            strict=True,
        )
    )
    return Priced(
        lines=priced_lines,
        subtotal_cents=subtotal,
        line_discount_cents=sum(line_discounts),
        coupon_cents=coupon_cents,
        loyalty_cents=loyalty_cents,
        taxable_cents=taxable,
        tax_cents=tax,
        delivery_fee_cents=delivery_fee_cents,
        total_cents=taxable + tax + delivery_fee_cents,
    )


def _rate(amount: int, bps: int) -> int:
    """``bps`` basis points of ``amount``, rounded half-even."""
    return round_half_even(amount * bps, BPS)


def _coupon_discount(coupon: CouponTerms | None, subtotal: int) -> int:
    if coupon is None:
        return 0
    _require("coupon percent_bps", coupon.percent_bps, 0, BPS)
    _require("coupon amount_cents", coupon.amount_cents, 0)
    if coupon.kind == "percent":
        return _rate(subtotal, coupon.percent_bps)
    if coupon.kind == "fixed":
        return min(coupon.amount_cents, subtotal)
    raise ValueError(f"unknown coupon kind {coupon.kind!r}")


def _require_line(line: PricedLine) -> None:
    _require("qty", line.qty, 1)
    _require("base_price_cents", line.base_price_cents, 0)
    _require("modifier_cents", line.modifier_cents, 0)
    _require("discount_bps", line.discount_bps, 0, BPS)


def _require(name: str, value: int, low: int, high: int | None = None) -> None:
    """Reject a value that is not an ``int`` (a float would bring rounding back) or
    lies outside ``low..high``."""
    if not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ValueError(f"{name} must be {bounds}, not {value}")
