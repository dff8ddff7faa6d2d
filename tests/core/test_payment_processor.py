"""The default payment processor: Stripe's test cards, card checks with Stripe's codes
and messages, charges made once per idempotency key (racing callers included), refunds
made once, a card's number and CVC kept nowhere, and the hook that replaces it."""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import MetaData, func, select

from tollway import Gateway, hookimpl, load_settings
from tollway.billing.card_records import ProcessorCard, ProcessorCharge
from tollway.billing.cards import (
    MAX_AMOUNT_CENTS,
    LocalCardProcessor,
    check_card,
    check_expiry,
    check_number,
    expired,
)
from tollway.billing.processor import CardDetails, CardError, Charge, PaymentProcessor
from tollway.testing import GatewayFactory

NEXT_YEAR = datetime.now(UTC).year + 1
VISA = CardDetails(number="4242 4242 4242 4242", exp_month=12, exp_year=NEXT_YEAR, cvc="123")
NOW = datetime(2030, 6, 15, 12, 0, tzinfo=UTC)


def _card(number: str, cvc: str = "123", **changes: Any) -> CardDetails:
    return CardDetails(
        number=number, cvc=cvc, **{"exp_month": 12, "exp_year": NEXT_YEAR, **changes}
    )


async def _charge(
    processor: PaymentProcessor, token: str, key: str, amount_cents: int = 1999, **terms: Any
) -> Charge:
    return await processor.charge(
        token,
        amount_cents=amount_cents,
        currency=terms.pop("currency", "usd"),
        idempotency_key=key,
        description="Pro plan, June",
        **terms,
    )


async def _count(gateway: Gateway, model: Any, *conditions: Any) -> int:
    async with gateway.database.transaction() as session:
        counted = await session.execute(select(func.count()).select_from(model).where(*conditions))
        return counted.scalar_one()


async def _refunded_at(gateway: Gateway, charge_id: str) -> datetime | None:
    async with gateway.database.transaction() as session:
        return await session.scalar(
            select(ProcessorCharge.refunded_at).where(ProcessorCharge.id == charge_id)
        )


# The test cards -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "cvc", "brand", "failure"),
    [
        ("4242 4242 4242 4242", "123", "visa", None),
        (
            "4000 0000 0000 9995",
            "123",
            "visa",
            ("insufficient_funds", "Your card has insufficient funds."),
        ),
        ("4000 0000 0000 0341", "123", "visa", ("card_declined", "Your card was declined.")),
        # Any other valid number behaves like 4242, whatever its network.
        ("5555 5555 5555 4444", "123", "mastercard", None),
        ("2223 0031 2200 3222", "123", "mastercard", None),
        ("3782 822463 10005", "1234", "amex", None),
        ("6011 1111 1111 1117", "123", "discover", None),
        ("4000-0566-5566-5556", "123", "visa", None),
        ("3566 0020 2036 0505", "123", "unknown", None),  # JCB
        ("4222 2222 2222 2", "123", "visa", None),  # 13 digits
        ("4242 4242 4242 4242 428", "123", "visa", None),  # 19 digits
    ],
)
async def test_each_test_card_saves_and_charges_as_stripes_does(
    gateway_factory: GatewayFactory,
    number: str,
    cvc: str,
    brand: str,
    failure: tuple[str, str] | None,
) -> None:
    gateway = await gateway_factory()
    saved = await gateway.payments.save_card(_card(number, cvc, exp_month=3))
    assert re.fullmatch(r"card_[A-Za-z0-9_-]{24}", saved.token)
    assert (saved.brand, saved.last4, saved.exp_month, saved.exp_year) == (
        brand,
        re.sub(r"\D", "", number)[-4:],
        3,
        NEXT_YEAR,
    )
    for attempt in ("first", "second"):  # every charge goes the same way
        charge = await _charge(gateway.payments, saved.token, f"{number}-{attempt}")
        assert re.fullmatch(r"ch_[A-Za-z0-9_-]{24}", charge.id)
        assert (charge.amount_cents, charge.currency) == (1999, "usd")
        if failure is None:
            assert (charge.status, charge.failure_code, charge.failure_message) == (
                "succeeded",
                None,
                None,
            )
        else:
            assert (charge.status, charge.failure_code, charge.failure_message) == (
                "failed",
                *failure,
            )
    assert await _count(gateway, ProcessorCharge, ProcessorCharge.card_token == saved.token) == 2


async def test_the_declined_test_card_is_refused_when_saved(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory()
    with pytest.raises(CardError) as refused:
        await gateway.payments.save_card(_card("4000 0000 0000 0002"))
    assert (refused.value.code, refused.value.message) == (
        "card_declined",
        "Your card was declined.",
    )
    assert refused.value.status_code == 422
    assert await _count(gateway, ProcessorCard) == 0


# Checking a card -----------------------------------------------------------------


INVALID_NUMBER = ("invalid_number", "Your card number is invalid.")
INVALID_MONTH = ("invalid_expiry_month", "Your card's expiration month is invalid.")
INVALID_YEAR = ("invalid_expiry_year", "Your card's expiration year is invalid.")
EXPIRED = ("expired_card", "Your card has expired.")
INVALID_CVC = ("invalid_cvc", "Your card's security code is invalid.")


@pytest.mark.parametrize(
    ("card", "refusal"),
    [
        (_card("4242 4242 4242 4241"), INVALID_NUMBER),  # Luhn
        (_card("4242 4242 4242 42"), INVALID_NUMBER),  # Luhn-valid, but no Visa has 14 digits
        (_card("4242 4242 4242 424"), INVALID_NUMBER),  # nor 15
        (_card("6011 1111 1111 1111 3"), INVALID_NUMBER),  # nor a Discover card 17
        (_card("4242 4242"), INVALID_NUMBER),
        (_card("4242.4242.4242.4242"), INVALID_NUMBER),
        (_card("4242 4242 4242 424x"), INVALID_NUMBER),
        (_card("\uff14\uff12" * 8), INVALID_NUMBER),  # full-width digits
        (_card(""), INVALID_NUMBER),
        (_card(" - "), INVALID_NUMBER),
        (_card("4" * 40), INVALID_NUMBER),
        (_card("378282246310005 0", "1234"), INVALID_NUMBER),
        (_card("5555 5555 5555 4444 0"), INVALID_NUMBER),
        (_card("4242 4242 4242 4242", exp_month=0), INVALID_MONTH),
        (_card("4242 4242 4242 4242", exp_month=13), INVALID_MONTH),
        (_card("4242 4242 4242 4242", exp_year=30), INVALID_YEAR),
        (_card("4242 4242 4242 4242", exp_year=10_000), INVALID_YEAR),
        (_card("4242 4242 4242 4242", exp_year=NEXT_YEAR - 3), EXPIRED),
        (_card("4242 4242 4242 4242", "12"), INVALID_CVC),
        (_card("4242 4242 4242 4242", "1234"), INVALID_CVC),
        (_card("4242 4242 4242 4242", "12a"), INVALID_CVC),
        (_card("3782 822463 10005", "123"), INVALID_CVC),
        (_card("4242 4242 4242 4242", exp_month=0, cvc="1"), INVALID_MONTH),  # first problem
    ],
)
async def test_invalid_details_are_refused_with_stripes_code_and_message(
    gateway_factory: GatewayFactory, card: CardDetails, refusal: tuple[str, str]
) -> None:
    gateway = await gateway_factory()
    with pytest.raises(CardError) as refused:
        await gateway.payments.save_card(card)
    assert (refused.value.code, refused.value.message) == refusal
    assert await _count(gateway, ProcessorCard) == 0


BRANDS = {
    "visa": (["4"], [13, 16, 19]),
    "mastercard": ([str(p) for p in [*range(51, 56), *range(2221, 2721)]], [16]),
    "amex": (["34", "37"], [15]),
    "discover": (["6011", "65", *(str(p) for p in range(644, 650))], [16]),
}


def _check_digit(partial: str) -> str:
    """The Luhn check digit to append to ``partial`` (written independently of the
    processor's check, to judge it)."""
    total = 0
    for position, char in enumerate(reversed(partial)):
        product = int(char) * (2 if position % 2 == 0 else 1)
        total += product // 10 + product % 10
    return str(-total % 10)


@st.composite
def card_numbers(draw: st.DrawFn) -> tuple[str, str]:
    """``(brand, number)``: a Luhn-valid number of a random brand, prefix and length."""
    brand = draw(st.sampled_from(sorted(BRANDS)))
    prefixes, lengths = BRANDS[brand]
    prefix = draw(st.sampled_from(prefixes))
    length = draw(st.sampled_from(lengths))
    body_length = length - len(prefix) - 1
    body = draw(st.text("0123456789", min_size=body_length, max_size=body_length))
    return brand, prefix + body + _check_digit(prefix + body)


@settings(max_examples=300)
@given(card_numbers(), st.sampled_from(["", " ", "-"]))
def test_any_valid_number_of_each_brand_is_accepted(
    branded: tuple[str, str], separator: str
) -> None:
    brand, number = branded
    typed = separator.join(number[i : i + 4] for i in range(0, len(number), 4))
    cvc = "1234" if brand == "amex" else "123"
    assert check_card(_card(typed, cvc, exp_year=2031), NOW) == (number, brand)


@settings(max_examples=300)
@given(card_numbers(), st.data())
def test_any_single_digit_change_of_a_valid_number_is_refused(
    branded: tuple[str, str], data: st.DataObject
) -> None:
    _brand, number = branded
    position = data.draw(st.integers(0, len(number) - 1))
    digit = data.draw(st.sampled_from([d for d in "0123456789" if d != number[position]]))
    changed = number[:position] + digit + number[position + 1 :]
    with pytest.raises(CardError) as refused:
        check_number(changed)
    assert refused.value.code == "invalid_number"


@pytest.mark.parametrize(
    ("now", "is_expired"),
    [
        (datetime(2030, 12, 31, 23, 59, 59, tzinfo=UTC), False),
        (datetime(2031, 1, 1, 0, 0, tzinfo=UTC), True),
        # 23:30 UTC on December 31st, though New Year's Day in Paris
        (datetime(2031, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))), False),
        # 00:30 UTC on January 1st, though still December 31st in New York
        (datetime(2030, 12, 31, 19, 30, tzinfo=timezone(timedelta(hours=-5))), True),
        (datetime(2030, 1, 1, tzinfo=UTC), False),
    ],
)
def test_a_card_expires_when_its_month_ends_in_utc(now: datetime, is_expired: bool) -> None:
    assert expired(12, 2030, now) is is_expired
    if is_expired:
        with pytest.raises(CardError, match=r"^Your card has expired\.$"):
            check_expiry(12, 2030, now)
    else:
        check_expiry(12, 2030, now)


def test_the_last_month_of_year_9999_is_not_a_problem() -> None:
    check_expiry(12, 9999, NOW)


# Charges ---------------------------------------------------------------------------


async def test_a_charge_is_made_once_per_idempotency_key(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory()
    saved = await gateway.payments.save_card(VISA)
    first = await _charge(gateway.payments, saved.token, "invoice-1")
    again = await _charge(gateway.payments, saved.token, "invoice-1", currency="USD")
    other = await _charge(gateway.payments, saved.token, "invoice-2")
    assert again == first
    assert first.succeeded
    assert other.id != first.id
    assert await _count(gateway, ProcessorCharge) == 2


async def test_a_failed_charge_is_answered_again_for_its_key(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory()
    saved = await gateway.payments.save_card(_card("4000 0000 0000 9995"))
    first = await _charge(gateway.payments, saved.token, "attempt-1")
    assert not first.succeeded
    assert await _charge(gateway.payments, saved.token, "attempt-1") == first
    assert await _count(gateway, ProcessorCharge) == 1


@pytest.mark.parametrize(
    "terms",
    [{"amount_cents": 2000}, {"currency": "eur"}, {"token": "the other card"}],
)
async def test_a_key_reused_for_other_terms_is_a_programming_error(
    gateway_factory: GatewayFactory, terms: dict[str, Any]
) -> None:
    gateway = await gateway_factory()
    saved = await gateway.payments.save_card(VISA)
    other = await gateway.payments.save_card(VISA)
    first = await _charge(gateway.payments, saved.token, "invoice-1")
    terms = dict(terms)  # the same parameters serve each backend
    token = other.token if terms.pop("token", None) else saved.token
    with pytest.raises(ValueError, match=f"used for charge {first.id}"):
        await _charge(gateway.payments, token, "invoice-1", **terms)
    assert await _count(gateway, ProcessorCharge) == 1


async def test_racing_charges_with_one_key_charge_once(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory()
    # Other processes of the deployment: engines (and connection pools) of their own.
    peers = [gateway, *(Gateway(gateway.settings) for _ in range(3))]
    try:
        saved = await gateway.payments.save_card(VISA)
        charges = await asyncio.gather(
            *(
                _charge(peer.payments, saved.token, "renewal-42", 4900)
                for peer in peers
                for _ in range(4)
            )
        )
    finally:
        for peer in peers[1:]:
            await peer.database.dispose()
    assert len(set(charges)) == 1
    assert charges[0].succeeded
    assert charges[0].amount_cents == 4900
    assert await _count(gateway, ProcessorCharge) == 1


async def test_a_forgotten_card_is_declined_but_its_charges_stand(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory()
    saved = await gateway.payments.save_card(VISA)
    before = await _charge(gateway.payments, saved.token, "before")
    await gateway.payments.forget_card(saved.token)
    await gateway.payments.forget_card(saved.token)  # forgetting again changes nothing
    after = await _charge(gateway.payments, saved.token, "after")
    assert (after.status, after.failure_code, after.failure_message) == (
        "failed",
        "card_declined",
        "Your card was declined.",
    )
    assert await _charge(gateway.payments, saved.token, "before") == before


async def test_a_card_that_expired_after_saving_fails_its_charges(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory()
    moment = [NOW]
    processor = LocalCardProcessor(gateway.database, clock=lambda: moment[0])
    saved = await processor.save_card(_card("4242424242424242", exp_month=7, exp_year=2030))
    assert (await _charge(processor, saved.token, "july")).succeeded
    moment[0] = datetime(2030, 8, 1, tzinfo=UTC)
    august = await _charge(processor, saved.token, "august")
    assert (august.status, august.failure_code, august.failure_message) == (
        "failed",
        "expired_card",
        "Your card has expired.",
    )


@pytest.mark.parametrize(
    ("terms", "complaint"),
    [
        ({"amount_cents": 0}, "amount_cents must be"),
        ({"amount_cents": -100}, "amount_cents must be"),
        ({"amount_cents": MAX_AMOUNT_CENTS + 1}, "amount_cents must be"),
        ({"currency": "dollars"}, "currency must be"),
        ({"currency": "us"}, "currency must be"),
        ({"currency": "\u20acur"}, "currency must be"),
        ({"key": ""}, "idempotency_key must be"),
        ({"key": "k" * 256}, "idempotency_key must be"),
        ({"token": "card_unknown"}, "unknown card token"),
    ],
)
async def test_a_malformed_charge_is_a_programming_error(
    gateway_factory: GatewayFactory, terms: dict[str, Any], complaint: str
) -> None:
    gateway = await gateway_factory()
    saved = await gateway.payments.save_card(VISA)
    terms = dict(terms)  # the same parameters serve each backend
    token = terms.pop("token", saved.token)
    with pytest.raises(ValueError, match=complaint):
        await _charge(gateway.payments, token, terms.pop("key", "invoice-1"), **terms)
    assert await _count(gateway, ProcessorCharge) == 0


# Refunds and forgetting -------------------------------------------------------------


async def test_refunding_twice_refunds_once(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory()
    saved = await gateway.payments.save_card(VISA)
    charge = await _charge(gateway.payments, saved.token, "invoice-1")
    assert await _refunded_at(gateway, charge.id) is None
    await gateway.payments.refund(charge.id)
    refunded_at = await _refunded_at(gateway, charge.id)
    assert refunded_at is not None
    await gateway.payments.refund(charge.id)
    await asyncio.gather(*(gateway.payments.refund(charge.id) for _ in range(4)))
    assert await _refunded_at(gateway, charge.id) == refunded_at


async def test_racing_refunds_refund_once(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory()
    saved = await gateway.payments.save_card(VISA)
    charge = await _charge(gateway.payments, saved.token, "invoice-1")
    await asyncio.gather(*(gateway.payments.refund(charge.id) for _ in range(6)))
    assert await _count(gateway, ProcessorCharge, ProcessorCharge.refunded_at.is_not(None)) == 1


async def test_refunding_a_failed_or_unknown_charge_is_a_programming_error(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory()
    saved = await gateway.payments.save_card(_card("4000000000000341"))
    failed = await _charge(gateway.payments, saved.token, "invoice-1")
    with pytest.raises(ValueError, match="nothing to refund"):
        await gateway.payments.refund(failed.id)
    with pytest.raises(ValueError, match="unknown charge"):
        await gateway.payments.refund("ch_unknown")
    assert await _refunded_at(gateway, failed.id) is None


async def test_forgetting_an_unknown_card_is_a_programming_error(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory()
    with pytest.raises(ValueError, match="unknown card token"):
        await gateway.payments.forget_card("card_unknown")


# The number and CVC stay in memory --------------------------------------------------

SECRET_CARD = CardDetails(
    number="3714 496353 98431", exp_month=11, exp_year=NEXT_YEAR, cvc="7391", name="A. Holder"
)
"""An American Express test number, and a CVC no other value holds by chance."""


def _leaks(text: str) -> list[str]:
    """What of the secret card's number or CVC ``text`` shows."""
    digits = SECRET_CARD.number.replace(" ", "")
    shown = [form for form in (digits, SECRET_CARD.number, digits[:11]) if form in text]
    if re.search(rf"(?<![\d.]){SECRET_CARD.cvc}(?!\d)", text):
        shown.append("CVC")
    return shown


async def _every_value(gateway: Gateway) -> list[str]:
    """Every value of every row of every table in the gateway's database, as text
    (timestamps aside: they cannot hold a number typed by a customer)."""
    tables = MetaData()
    async with gateway.database.engine.connect() as connection:
        await connection.run_sync(tables.reflect)
        rows = [
            row for table in tables.sorted_tables for row in await connection.execute(select(table))
        ]
    return [str(value) for row in rows for value in row if not isinstance(value, datetime)]


async def test_the_number_and_cvc_reach_no_table_log_or_repr(
    gateway_factory: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    gateway = await gateway_factory()
    saved = await gateway.payments.save_card(SECRET_CARD)
    charge = await _charge(gateway.payments, saved.token, "invoice-1")
    await gateway.payments.refund(charge.id)
    with pytest.raises(CardError) as refused:
        await gateway.payments.save_card(_card(SECRET_CARD.number, "739"))
    values = await _every_value(gateway)
    assert saved.token in values  # the dump saw the processor's rows
    assert charge.id in values
    assert [value for value in values if _leaks(value)] == []
    messages = [record.getMessage() for record in caplog.records]
    assert any(saved.token in message for message in messages)  # and the logs its records
    assert [message for message in messages if _leaks(message)] == []
    shown = [repr(SECRET_CARD), str(SECRET_CARD), f"{SECRET_CARD}", str(refused.value)]
    assert [text for text in shown if _leaks(text)] == []


def test_the_leak_detector_sees_each_form_of_the_secrets() -> None:
    digits = SECRET_CARD.number.replace(" ", "")
    assert _leaks(f"number={digits}") == [digits, digits[:11]]
    assert _leaks(f"typed '{SECRET_CARD.number}'") == [SECRET_CARD.number]
    assert _leaks(f"{digits[:11]}XXXX") == [digits[:11]]
    assert _leaks(f"cvc: {SECRET_CARD.cvc}.") == ["CVC"]
    assert _leaks(f"({SECRET_CARD.cvc}, '{SECRET_CARD.cvc}')") == ["CVC"]
    assert _leaks(f"in 0.{SECRET_CARD.cvc}s, 1{SECRET_CARD.cvc}") == []


# The hook ------------------------------------------------------------------------------


def _gateway(*plugins: tuple[str, object]) -> Gateway:
    settings = load_settings(environ={}, plugins=[], database_url="sqlite+aiosqlite:///:memory:")
    return Gateway(settings, extra_plugins=plugins)


class OwnProcessorPlugin:
    def __init__(self, processor: PaymentProcessor | None) -> None:
        self.processor = processor
        self.calls = 0

    @hookimpl
    def tollway_payment_processor(self, gateway: Gateway) -> PaymentProcessor | None:
        self.calls += 1
        return self.processor


async def test_the_default_processor_is_the_local_one() -> None:
    gateway = _gateway()
    try:
        assert isinstance(gateway.payments, LocalCardProcessor)
        assert gateway.payments.database is gateway.database
    finally:
        await gateway.database.dispose()


async def test_a_plugins_processor_replaces_the_default() -> None:
    mine = LocalCardProcessor(_gateway().database)
    plugin = OwnProcessorPlugin(mine)
    gateway = _gateway(("processor", plugin))
    try:
        assert gateway.payments is mine
        assert gateway.payments is mine
        assert plugin.calls == 1  # resolved once, on first use
    finally:
        await gateway.database.dispose()
        await mine.database.dispose()


async def test_a_plugin_answering_none_defers_to_the_default() -> None:
    gateway = _gateway(("processor", OwnProcessorPlugin(None)))
    try:
        assert isinstance(gateway.payments, LocalCardProcessor)
    finally:
        await gateway.database.dispose()
