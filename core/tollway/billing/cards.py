"""The default payment processor: real card checks and test-card answers, no card network.

:class:`LocalCardProcessor` does for a gateway what an outside processor would: it
checks a card the way Stripe does (Luhn, brand by prefix and length, expiry, security
code), with Stripe's codes and customer-facing messages, keeps it under a random
token and charges it, answering like Stripe's test cards:

===================== =========================================================
4242 4242 4242 4242   saved; every charge succeeds
4000 0000 0000 0002   refused when saved (``card_declined``)
4000 0000 0000 9995   saved; every charge fails (``insufficient_funds``)
4000 0000 0000 0341   saved; every charge fails (``card_declined``)
any other valid card  like 4242: saved, every charge succeeds
===================== =========================================================

"Any other valid card" includes networks it does not name (JCB, Diners, UnionPay...):
a Luhn-valid number of 12 to 19 digits is saved with brand ``unknown``.

The processor stands for a service on someone else's servers, so it writes in short
transactions of its own, never in a caller's: a charge stays made whether or not the
caller's work then commits, which is why charges carry idempotency keys and can be
refunded. On SQLite a process has one writer at a time: call the processor outside an
open write transaction, or its write waits for that transaction's turn and times out.

Mistakes of the calling code (an unknown token or charge id, a reused idempotency key
with other terms, a malformed amount or currency) raise :class:`ValueError`; what a
customer can cause is a :class:`CardError` when saving or a failed :class:`Charge`.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final, Literal, cast

import msgspec
from sqlalchemy import CursorResult, Update, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.billing.card_records import ProcessorCard, ProcessorCharge
from tollway.billing.processor import Brand, CardDetails, CardError, Charge, SavedCard
from tollway.db import Database
from tollway.db.base import utcnow

log = logging.getLogger("tollway.billing")

ChargeBehaviour = Literal["approve", "insufficient_funds", "card_declined"]
"""How a saved card's charges go: ``approve``, or the decline code each one gets."""

MESSAGES: Final = {
    "invalid_number": "Your card number is invalid.",
    "invalid_expiry_month": "Your card's expiration month is invalid.",
    "invalid_expiry_year": "Your card's expiration year is invalid.",
    "expired_card": "Your card has expired.",
    "invalid_cvc": "Your card's security code is invalid.",
    "card_declined": "Your card was declined.",
    "insufficient_funds": "Your card has insufficient funds.",
}
"""Stripe's customer-facing message for each code this processor answers with."""

REFUSED_WHEN_SAVED: Final = "4000000000000002"
TEST_CARD_BEHAVIOURS: Final[dict[str, ChargeBehaviour]] = {
    "4000000000009995": "insufficient_funds",
    "4000000000000341": "card_declined",
}
"""Stripe's test numbers whose charges fail; every other valid number's succeed."""

BRAND_RULES: Final[tuple[tuple[Brand, tuple[tuple[int, int], ...], frozenset[int]], ...]] = (
    ("visa", ((4, 4),), frozenset({13, 16, 19})),
    ("mastercard", ((51, 55), (2221, 2720)), frozenset({16})),
    ("amex", ((34, 34), (37, 37)), frozenset({15})),
    ("discover", ((6011, 6011), (65, 65), (644, 649)), frozenset({16})),
)
"""Brand, ranges of leading digits (both ends included) and the lengths it issues."""
NUMBER_LENGTHS: Final = frozenset(range(12, 20))
"""Lengths of a card number of a network not named above (ISO/IEC 7812 issuers)."""

MAX_AMOUNT_CENTS: Final = 99_999_999
"""Stripe's largest charge: 999,999.99 in a currency of two decimals."""
MAX_IDEMPOTENCY_KEY_LENGTH: Final = 255


def refusal(code: str) -> CardError:
    """The :class:`CardError` for ``code``, with Stripe's message for it."""
    return CardError(MESSAGES[code], code)


def luhn_valid(digits: str) -> bool:
    """Whether ``digits`` passes the Luhn check, which catches every single mistyped
    digit and most swaps of neighbours."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        digit = int(char)
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def brand_of(digits: str) -> Brand:
    """The brand the number's leading digits name; ``unknown`` for other networks."""
    for brand, ranges, _lengths in BRAND_RULES:
        if any(low <= int(digits[: len(str(low))]) <= high for low, high in ranges):
            return brand
    return "unknown"


def _lengths(brand: Brand) -> frozenset[int]:
    return next((lengths for name, _, lengths in BRAND_RULES if name == brand), NUMBER_LENGTHS)


def check_number(number: str) -> tuple[str, Brand]:
    """The digits of ``number`` (typed with or without spaces and dashes) and its
    brand; ``invalid_number`` unless it is a number its brand could have issued."""
    digits = number.replace(" ", "").replace("-", "")
    if not (digits.isascii() and digits.isdigit() and len(digits) in NUMBER_LENGTHS):
        raise refusal("invalid_number")
    brand = brand_of(digits)
    if len(digits) not in _lengths(brand) or not luhn_valid(digits):
        raise refusal("invalid_number")
    return digits, brand


def expired(exp_month: int, exp_year: int, now: datetime) -> bool:
    """Whether the end of the expiry month (UTC) has passed: a card is good through
    the last day of the month printed on it."""
    today = now.astimezone(UTC)
    return (today.year, today.month) > (exp_year, exp_month)


def check_expiry(exp_month: int, exp_year: int, now: datetime) -> None:
    """``invalid_expiry_month``, ``invalid_expiry_year`` (not four digits) or
    ``expired_card`` at ``now``."""
    if not 1 <= exp_month <= 12:
        raise refusal("invalid_expiry_month")
    if not 1000 <= exp_year <= 9999:
        raise refusal("invalid_expiry_year")
    if expired(exp_month, exp_year, now):
        raise refusal("expired_card")


def check_cvc(cvc: str, brand: Brand) -> None:
    """``invalid_cvc`` unless ``cvc`` is 3 digits (4 on American Express cards)."""
    length = 4 if brand == "amex" else 3
    if not (cvc.isascii() and cvc.isdigit() and len(cvc) == length):
        raise refusal("invalid_cvc")


def check_card(card: CardDetails, now: datetime) -> tuple[str, Brand]:
    """The card's digits and brand once number, expiry and security code are valid at
    ``now`` (checked in that order, so the first problem is the one reported)."""
    digits, brand = check_number(card.number)
    check_expiry(card.exp_month, card.exp_year, now)
    check_cvc(card.cvc, brand)
    return digits, brand


def charge_behaviour(digits: str) -> ChargeBehaviour:
    """How charges of the card numbered ``digits`` go; ``card_declined`` for the test
    number that is refused outright."""
    if digits == REFUSED_WHEN_SAVED:
        raise refusal("card_declined")
    return TEST_CARD_BEHAVIOURS.get(digits, "approve")


def _charge_terms(amount_cents: int, currency: str, idempotency_key: str) -> str:
    """The currency as stored (lower case, like Stripe's); a :class:`ValueError` for
    terms no correct caller asks for."""
    if not 1 <= amount_cents <= MAX_AMOUNT_CENTS:
        raise ValueError(f"amount_cents must be 1..{MAX_AMOUNT_CENTS}, not {amount_cents}")
    if not (len(currency) == 3 and currency.isascii() and currency.isalpha()):
        raise ValueError(f"currency must be a three-letter ISO 4217 code, not {currency!r}")
    if not 0 < len(idempotency_key) <= MAX_IDEMPOTENCY_KEY_LENGTH:
        raise ValueError(f"idempotency_key must be 1..{MAX_IDEMPOTENCY_KEY_LENGTH} characters")
    return currency.lower()


def _charge_of(row: ProcessorCharge) -> Charge:
    return Charge(
        id=row.id,
        status="succeeded" if row.status == "succeeded" else "failed",
        amount_cents=row.amount_cents,
        currency=row.currency,
        failure_code=row.failure_code,
        failure_message=row.failure_message,
    )


async def _changed(session: AsyncSession, statement: Update) -> bool:
    """Run ``statement``; whether it changed a row."""
    result = cast(CursorResult[Any], await session.execute(statement))
    return bool(result.rowcount)


class LocalCardProcessor:
    """A :class:`tollway.billing.PaymentProcessor` keeping its cards and charges in
    ``database`` (tables ``processor_cards`` and ``processor_charges``).

    ``clock`` is the current time expiry is judged by (tests move it)."""

    def __init__(self, database: Database, *, clock: Callable[[], datetime] = utcnow) -> None:
        self.database = database
        self.clock = clock

    async def save_card(self, card: CardDetails) -> SavedCard:
        """Check ``card`` and keep what may be shown of it under a new token: brand,
        last four digits, expiry and how its charges go; never the number or CVC."""
        digits, brand = check_card(card, self.clock())
        try:
            behaviour = charge_behaviour(digits)
        except CardError as error:
            log.info("card refused when saved (%s ending %s): %s", brand, digits[-4:], error.code)
            raise
        saved = SavedCard(
            token="card_" + secrets.token_urlsafe(18),
            brand=brand,
            last4=digits[-4:],
            exp_month=card.exp_month,
            exp_year=card.exp_year,
        )
        async with self.database.transaction() as session:
            session.add(ProcessorCard(behaviour=behaviour, **msgspec.structs.asdict(saved)))
        log.info("card %s saved (%s ending %s)", saved.token, brand, saved.last4)
        return saved

    async def charge(
        self,
        token: str,
        *,
        amount_cents: int,
        currency: str,
        idempotency_key: str,
        description: str,
    ) -> Charge:
        """Charge the card ``token`` once per ``idempotency_key``: the first call's
        outcome is recorded under the key and every later call returns it, racing
        calls included (the key is unique; the insert that loses does nothing).

        A forgotten card is declined (``card_declined``), an expired one fails with
        ``expired_card``. ``description`` is for processors that show it; it is not
        kept. :class:`ValueError` for an unknown token, or for a key reused with
        another card, amount or currency."""
        currency = _charge_terms(amount_cents, currency, idempotency_key)
        attempt = {
            "id": "ch_" + secrets.token_urlsafe(18),
            "idempotency_key": idempotency_key,
            "card_token": token,
            "amount_cents": amount_cents,
            "currency": currency,
        }
        async with self.database.transaction() as session:
            card = await session.get(ProcessorCard, token)
            if card is None:
                raise ValueError(f"unknown card token {token!r}")
            attempt.update(self._outcome(card))
            insert = sqlite.insert if self.database.is_sqlite else postgresql.insert
            await session.execute(
                insert(ProcessorCharge)
                .values(**attempt)
                .on_conflict_do_nothing(index_elements=["idempotency_key"])
            )
            stored = await session.scalar(
                select(ProcessorCharge).where(ProcessorCharge.idempotency_key == idempotency_key)
            )
        assert stored is not None  # inserted, or there already
        if (stored.card_token, stored.amount_cents, stored.currency) != (
            token,
            amount_cents,
            currency,
        ):
            raise ValueError(
                f"idempotency key {idempotency_key!r} was used for charge {stored.id} "
                "of another card, amount or currency"
            )
        if stored.id == attempt["id"]:
            log.info(
                "charge %s of %d %s on card %s: %s",
                stored.id,
                amount_cents,
                currency,
                token,
                stored.failure_code or stored.status,
            )
        return _charge_of(stored)

    def _outcome(self, card: ProcessorCard) -> dict[str, str | None]:
        """Status and failure of a new charge of ``card``."""
        if card.forgotten_at is not None:
            failure: str | None = "card_declined"
        elif expired(card.exp_month, card.exp_year, self.clock()):
            failure = "expired_card"
        else:
            failure = None if card.behaviour == "approve" else card.behaviour
        return {
            "status": "failed" if failure else "succeeded",
            "failure_code": failure,
            "failure_message": MESSAGES[failure] if failure else None,
        }

    async def refund(self, charge_id: str) -> None:
        """Give a succeeded charge back; a second refund changes nothing.
        :class:`ValueError` for an unknown or failed charge (nothing was taken)."""
        refund = (
            update(ProcessorCharge)
            .where(
                ProcessorCharge.id == charge_id,
                ProcessorCharge.status == "succeeded",
                ProcessorCharge.refunded_at.is_(None),
            )
            .values(refunded_at=utcnow())
        )
        async with self.database.transaction() as session:
            if await _changed(session, refund):
                log.info("charge %s refunded", charge_id)
                return
            stored = await session.get(ProcessorCharge, charge_id)
        if stored is None:
            raise ValueError(f"unknown charge {charge_id!r}")
        if stored.status != "succeeded":
            raise ValueError(f"charge {charge_id} failed: there is nothing to refund")

    async def forget_card(self, token: str) -> None:
        """Stop charging the card (its later charges are declined); forgetting it again
        changes nothing. :class:`ValueError` for an unknown token."""
        forget = (
            update(ProcessorCard)
            .where(ProcessorCard.token == token, ProcessorCard.forgotten_at.is_(None))
            .values(forgotten_at=utcnow())
        )
        async with self.database.transaction() as session:
            if await _changed(session, forget):
                log.info("card %s forgotten", token)
                return
            known = await session.get(ProcessorCard, token)
        if known is None:
            raise ValueError(f"unknown card token {token!r}")
