"""The cart pricing pipeline (``tollway_pos.pricing``): exact rounding, allocations
that add up, the cart's identities for any cart, and worked examples by hand.

Reordering a cart never changes a cart-wide figure. A line's shares of the coupon and
loyalty discounts follow the line too, except where the largest-remainder method meets
a tie: lines whose exact shares have the same positive fractional part can trade a
cent, because the leftover cent goes to the earlier of them (tested precisely below).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tollway_pos.pricing import (
    BPS,
    CouponTerms,
    Priced,
    PricedLine,
    allocate,
    price,
    round_half_even,
)

weights_lists = st.lists(st.integers(0, 10**6), max_size=10)
cart_lines = st.lists(
    st.builds(
        PricedLine,
        product_id=st.text(min_size=1, max_size=4),
        name=st.just("item"),
        qty=st.integers(1, 20),
        base_price_cents=st.integers(0, 100_000),
        modifier_cents=st.integers(0, 5_000),
        discount_bps=st.sampled_from([0, 0, 1_000, 2_500, 10_000]) | st.integers(0, BPS),
    ),
    max_size=8,
)
coupons = st.none() | st.builds(
    CouponTerms,
    code=st.just("SAVE"),
    kind=st.sampled_from(["percent", "fixed"]),
    percent_bps=st.integers(0, BPS),
    amount_cents=st.integers(0, 2_000_000),
)
rates = st.fixed_dictionaries(
    {
        "coupon": coupons,
        "loyalty_bps": st.sampled_from([0, 200, 500]) | st.integers(0, BPS),
        "tax_bps": st.sampled_from([0, 825]) | st.integers(0, 100_000),
        "delivery_fee_cents": st.integers(0, 5_000),
    }
)


def line(product_id: str, cents: int, **fields: Any) -> PricedLine:
    defaults: dict[str, Any] = {"qty": 1, "modifier_cents": 0, "discount_bps": 0}
    return PricedLine(
        product_id=product_id, name=product_id, base_price_cents=cents, **(defaults | fields)
    )


def decimal_half_even(numerator: int, denominator: int) -> int:
    # 100 digits leave over 60 after the point for these sizes: a fraction r/d other
    # than a half is at least 1/(2d) > 1e-13 away from one, so the division's own
    # rounding cannot make or unmake a tie.
    with localcontext(prec=100):
        quotient = Decimal(numerator) / Decimal(denominator)
        return int(quotient.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def within_a_cent_of_share(part: int, amount: int, weight: int, whole: int) -> bool:
    """|part - amount * weight / whole| < 1, in integers; nothing to share of no weight."""
    if whole == 0:
        return part == 0
    return abs(part * whole - amount * weight) < whole


@given(st.integers(0, 10**30), st.sampled_from([1, 2, 4, 10, BPS]) | st.integers(1, 10**12))
def test_round_half_even_matches_decimal(numerator: int, denominator: int) -> None:
    assert round_half_even(numerator, denominator) == decimal_half_even(numerator, denominator)


@given(st.integers(0, 10**20), st.integers(1, 10**9))
def test_an_exact_half_rounds_to_the_even_neighbour(quotient: int, half: int) -> None:
    numerator, denominator = (2 * quotient + 1) * half, 2 * half  # quotient + 1/2
    rounded = round_half_even(numerator, denominator)
    assert rounded == decimal_half_even(numerator, denominator)
    assert rounded in (quotient, quotient + 1)
    assert rounded % 2 == 0


def test_round_half_even_by_hand() -> None:
    assert [round_half_even(n, 2) for n in range(8)] == [0, 0, 1, 2, 2, 2, 3, 4]
    assert round_half_even(125_000, BPS) == 12  # 12.5
    assert round_half_even(135_000, BPS) == 14  # 13.5
    assert round_half_even(125_001, BPS) == 13


@pytest.mark.parametrize(("numerator", "denominator"), [(-1, 2), (1, 0), (1, -2)])
def test_round_half_even_rejects_negatives_and_zero(numerator: int, denominator: int) -> None:
    with pytest.raises(ValueError, match="round_half_even"):
        round_half_even(numerator, denominator)


@given(weights_lists, st.data())
def test_allocations_add_up_within_their_weights(weights: list[int], data: st.DataObject) -> None:
    whole = sum(weights)
    amount = data.draw(st.integers(0, whole))
    parts = allocate(amount, weights)
    assert sum(parts) == amount
    assert all(0 <= part <= weight for part, weight in zip(parts, weights, strict=True))
    assert all(
        within_a_cent_of_share(part, amount, weight, whole)
        for part, weight in zip(parts, weights, strict=True)
    )


@given(st.lists(st.integers(1, 1_000), min_size=1, max_size=10), st.integers(0, 10**6))
def test_an_amount_beyond_the_weights_is_still_proportional(
    weights: list[int], amount: int
) -> None:
    parts = allocate(amount, weights)
    assert sum(parts) == amount
    whole = sum(weights)
    assert all(
        within_a_cent_of_share(part, amount, weight, whole)
        for part, weight in zip(parts, weights, strict=True)
    )


@given(weights_lists, st.data())
def test_only_tied_remainders_trade_a_cent_when_reordered(
    weights: list[int], data: st.DataObject
) -> None:
    whole = sum(weights)
    amount = data.draw(st.integers(0, whole))
    order = data.draw(st.permutations(range(len(weights))))
    parts = allocate(amount, weights)
    reordered = allocate(amount, [weights[index] for index in order])
    moved = {index: reordered[position] for position, index in enumerate(order)}
    remainders = [amount * weight % whole if whole else 0 for weight in weights]
    for index, remainder in enumerate(remainders):
        if remainder == 0 or remainders.count(remainder) == 1:
            assert moved[index] == parts[index]
        else:
            assert abs(moved[index] - parts[index]) <= 1
    for remainder in set(remainders):  # a tied group keeps its cents between its lines
        group = [index for index, other in enumerate(remainders) if other == remainder]
        assert sum(moved[index] for index in group) == sum(parts[index] for index in group)


def test_allocate_by_hand() -> None:
    # 33.3, 33.3, 33.4: the leftover cent goes to the largest remainder.
    assert allocate(100, [333, 333, 334]) == [33, 33, 34]
    # 33.633, 33.633, 33.734: two cents left; the tie at .633 goes to the earlier line.
    assert allocate(101, [333, 333, 334]) == [34, 33, 34]
    assert allocate(1, [5, 5]) == [1, 0]
    assert allocate(2, [1, 1, 1]) == [1, 1, 0]
    assert allocate(3, [0, 2, 0, 1]) == [0, 2, 0, 1]
    assert allocate(0, [0, 0]) == [0, 0]
    assert allocate(0, []) == []


@pytest.mark.parametrize(("amount", "weights"), [(1, []), (1, [0, 0]), (-1, [1]), (1, [2, -1])])
def test_allocate_rejects_what_cannot_be_split(amount: int, weights: list[int]) -> None:
    with pytest.raises(ValueError, match=r"allocate|amount|weight"):
        allocate(amount, weights)


def check_identities(priced: Priced) -> None:
    lines = priced.lines
    assert priced.subtotal_cents == sum(line.total_cents for line in lines)
    assert priced.line_discount_cents == sum(line.line_discount_cents for line in lines)
    assert priced.coupon_cents == sum(line.coupon_cents for line in lines)
    assert priced.loyalty_cents == sum(line.loyalty_cents for line in lines)
    assert (
        priced.taxable_cents == priced.subtotal_cents - priced.coupon_cents - priced.loyalty_cents
    )
    assert priced.total_cents == (
        priced.subtotal_cents
        - priced.coupon_cents
        - priced.loyalty_cents
        + priced.tax_cents
        + priced.delivery_fee_cents
    )
    assert priced.taxable_cents >= 0
    assert priced.total_cents >= 0
    for line in lines:
        assert line.gross_cents == line.unit_price_cents * line.qty
        assert line.total_cents == line.gross_cents - line.line_discount_cents >= 0
        assert 0 <= line.coupon_cents + line.loyalty_cents <= line.total_cents


@given(cart_lines, rates)
def test_every_cart_adds_up(lines: list[PricedLine], rates: dict[str, Any]) -> None:
    priced = price(lines, **rates)
    check_identities(priced)
    assert priced.delivery_fee_cents == rates["delivery_fee_cents"]
    subtotal, coupon = priced.subtotal_cents, priced.coupon_cents
    after_coupon = subtotal - coupon
    totals = [line.total_cents for line in priced.lines]
    lefts = [line.total_cents - line.coupon_cents for line in priced.lines]
    assert [line.coupon_cents for line in priced.lines] == allocate(coupon, totals)
    assert [line.loyalty_cents for line in priced.lines] == allocate(priced.loyalty_cents, lefts)
    for line in priced.lines:
        assert within_a_cent_of_share(line.coupon_cents, coupon, line.total_cents, subtotal)
        left = line.total_cents - line.coupon_cents
        assert within_a_cent_of_share(line.loyalty_cents, priced.loyalty_cents, left, after_coupon)


@given(cart_lines, rates, st.integers(0, 10**6))
def test_a_fixed_coupon_beyond_the_subtotal_leaves_nothing_to_tax(
    lines: list[PricedLine], rates: dict[str, Any], extra: int
) -> None:
    subtotal = price(lines, **rates).subtotal_cents
    coupon = CouponTerms(code="ALL", kind="fixed", amount_cents=subtotal + extra)
    priced = price(lines, **(rates | {"coupon": coupon}))
    check_identities(priced)
    assert priced.coupon_cents == subtotal
    assert priced.taxable_cents == priced.loyalty_cents == priced.tax_cents == 0
    assert priced.total_cents == rates["delivery_fee_cents"]
    assert all(line.coupon_cents == line.total_cents for line in priced.lines)


CART_FIGURES = (
    "subtotal_cents",
    "line_discount_cents",
    "coupon_cents",
    "loyalty_cents",
    "taxable_cents",
    "tax_cents",
    "delivery_fee_cents",
    "total_cents",
)
LINE_FIGURES = ("unit_price_cents", "gross_cents", "line_discount_cents", "total_cents")


def tied(amount: int, weights: list[int]) -> list[bool]:
    """Which parts of ``allocate(amount, weights)`` share a positive remainder."""
    whole = sum(weights) or 1
    remainders = [amount * weight % whole for weight in weights]
    return [bool(rem) and remainders.count(rem) > 1 for rem in remainders]


@given(cart_lines, rates, st.data())
def test_reordering_the_lines_changes_no_cart_figure(
    lines: list[PricedLine], rates: dict[str, Any], data: st.DataObject
) -> None:
    order = data.draw(st.permutations(range(len(lines))))
    priced = price(lines, **rates)
    reordered = price([lines[index] for index in order], **rates)
    for figure in CART_FIGURES:
        assert getattr(reordered, figure) == getattr(priced, figure)
    moved = {index: reordered.lines[position] for position, index in enumerate(order)}
    totals = [line.total_cents for line in priced.lines]
    coupon_ties = tied(priced.coupon_cents, totals)
    for index, line in enumerate(priced.lines):
        for figure in LINE_FIGURES:
            assert getattr(moved[index], figure) == getattr(line, figure)
        if not coupon_ties[index]:
            assert moved[index].coupon_cents == line.coupon_cents
    if not any(coupon_ties):  # then each line has the same left for loyalty, in any order
        left = [line.total_cents - line.coupon_cents for line in priced.lines]
        loyalty_ties = tied(priced.loyalty_cents, left)
        for index, line in enumerate(priced.lines):
            if not loyalty_ties[index]:
                assert moved[index].loyalty_cents == line.loyalty_cents


def test_a_tied_cent_goes_to_whichever_line_comes_first() -> None:
    tea, coffee = line("tea", 100), line("coffee", 100)
    coupon = CouponTerms(code="CENT", kind="fixed", amount_cents=1)
    rates: dict[str, Any] = {"coupon": coupon, "loyalty_bps": 0, "tax_bps": 0}
    first = price([tea, coffee], delivery_fee_cents=0, **rates)
    second = price([coffee, tea], delivery_fee_cents=0, **rates)
    assert [(item.product_id, item.coupon_cents) for item in first.lines] == [
        ("tea", 1),
        ("coffee", 0),
    ]
    assert [(item.product_id, item.coupon_cents) for item in second.lines] == [
        ("coffee", 1),
        ("tea", 0),
    ]
    assert first.total_cents == second.total_cents == 199


def test_a_ten_percent_coupon_over_three_lines_by_hand() -> None:
    lines = [line("a", 333), line("b", 333), line("c", 334)]
    coupon = CouponTerms(code="TEN", kind="percent", percent_bps=1_000)
    priced = price(lines, coupon=coupon, loyalty_bps=500, tax_bps=825, delivery_fee_cents=299)
    # Subtotal 1000; coupon 100, split 33.3 / 33.3 / 33.4 -> 33, 33, 34.
    assert priced.subtotal_cents == 1_000
    assert priced.coupon_cents == 100
    assert [item.coupon_cents for item in priced.lines] == [33, 33, 34]
    # Loyalty: 5% of 900 = 45, over 300 / 300 / 300 left -> 15 each.
    assert priced.loyalty_cents == 45
    assert [item.loyalty_cents for item in priced.lines] == [15, 15, 15]
    # Taxable 855; tax 8.25% = 70.5375 -> 71; total 855 + 71 + 299.
    assert priced.taxable_cents == 855
    assert priced.tax_cents == 71
    assert priced.total_cents == 1_225


def test_loyalty_is_shared_over_what_the_coupon_left_by_hand() -> None:
    lines = [line("a", 100), line("b", 111), line("c", 256)]
    coupon = CouponTerms(code="TEN", kind="percent", percent_bps=1_000)
    priced = price(lines, coupon=coupon, loyalty_bps=500, tax_bps=825, delivery_fee_cents=0)
    # Coupon: 10% of 467 = 46.7 -> 47, split 10.06 / 11.17 / 25.76 -> 10, 11, 26.
    assert priced.coupon_cents == 47
    assert [item.coupon_cents for item in priced.lines] == [10, 11, 26]
    # Loyalty: 5% of 420 = 21, over 90 / 100 / 230 left: 4.5 / 5 / 11.5; the tied
    # leftover cent goes to the earlier line. (Over the line totals it would be 4, 5, 12.)
    assert priced.loyalty_cents == 21
    assert [item.loyalty_cents for item in priced.lines] == [5, 5, 11]
    # Taxable 399; tax 8.25% = 32.9175 -> 33.
    assert (priced.taxable_cents, priced.tax_cents, priced.total_cents) == (399, 33, 432)


def test_line_figures_by_hand() -> None:
    latte = line("latte", 450, qty=3, modifier_cents=75, discount_bps=1_500)
    half_down = line("muffin", 125, discount_bps=1_000)
    half_up = line("scone", 135, discount_bps=1_000)
    priced = price(
        [latte, half_down, half_up], coupon=None, loyalty_bps=0, tax_bps=0, delivery_fee_cents=0
    )
    latte_price, muffin_price, scone_price = priced.lines
    # (450 + 75) * 3 = 1575; 15% = 236.25 -> 236.
    assert (latte_price.unit_price_cents, latte_price.gross_cents) == (525, 1_575)
    assert (latte_price.line_discount_cents, latte_price.total_cents) == (236, 1_339)
    # 10% of 125 = 12.5 -> 12 (even), of 135 = 13.5 -> 14 (even).
    assert (muffin_price.line_discount_cents, muffin_price.total_cents) == (12, 113)
    assert (scone_price.line_discount_cents, scone_price.total_cents) == (14, 121)
    assert priced.line_discount_cents == 262
    assert priced.subtotal_cents == priced.total_cents == 1_573


def test_a_fixed_coupon_beyond_the_subtotal_by_hand() -> None:
    coupon = CouponTerms(code="BIG", kind="fixed", amount_cents=1_000)
    priced = price(
        [line("a", 500), line("b", 250)],
        coupon=coupon,
        loyalty_bps=500,
        tax_bps=825,
        delivery_fee_cents=399,
    )
    assert [item.coupon_cents for item in priced.lines] == [500, 250]
    assert (priced.coupon_cents, priced.loyalty_cents, priced.tax_cents) == (750, 0, 0)
    assert priced.total_cents == 399


def test_an_empty_cart_costs_the_delivery_fee() -> None:
    coupon = CouponTerms(code="TEN", kind="percent", percent_bps=1_000)
    priced = price([], coupon=coupon, loyalty_bps=500, tax_bps=825, delivery_fee_cents=250)
    assert priced.lines == ()
    assert (priced.subtotal_cents, priced.coupon_cents, priced.total_cents) == (0, 0, 250)


VALID: dict[str, Any] = {"coupon": None, "loyalty_bps": 0, "tax_bps": 0, "delivery_fee_cents": 0}


@pytest.mark.parametrize(
    ("lines", "rates", "message"),
    [
        ([line("a", 1, qty=0)], {}, "qty"),
        ([line("a", -1)], {}, "base_price_cents"),
        ([line("a", 1, modifier_cents=-1)], {}, "modifier_cents"),
        ([line("a", 1, discount_bps=10_001)], {}, "discount_bps"),
        ([], {"loyalty_bps": 10_001}, "loyalty_bps"),
        ([], {"tax_bps": 100_001}, "tax_bps"),
        ([], {"tax_bps": -1}, "tax_bps"),
        ([], {"delivery_fee_cents": -1}, "delivery_fee_cents"),
        ([], {"coupon": CouponTerms(code="X", kind="percent", percent_bps=10_001)}, "percent"),
        ([], {"coupon": CouponTerms(code="X", kind="fixed", amount_cents=-1)}, "amount"),
    ],
)
def test_out_of_range_arguments_are_refused(
    lines: list[PricedLine], rates: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        price(lines, **(VALID | rates))


def test_an_unknown_coupon_kind_is_refused() -> None:
    coupon = CouponTerms(code="X", kind="bogus", percent_bps=100)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bogus"):
        price([line("a", 100)], **(VALID | {"coupon": coupon}))


def test_a_float_is_refused() -> None:
    with pytest.raises(TypeError, match="float"):
        price([line("a", 100)], **(VALID | {"tax_bps": 8.25}))
