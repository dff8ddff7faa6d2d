"""The payment processor: the one place a card number exists, behind a mechanism hook.

``tollway_payment_processor`` returns the deployment's :class:`PaymentProcessor`. The
default (:class:`tollway.billing.cards.LocalCardProcessor`) is a real local processor
for a gateway that reaches no card network: it validates numbers (Luhn, expiry, CVC)
and answers like the well-known test cards. An adapter for a real processor implements
the same four methods.

The billing engine hands a :class:`CardDetails` to :meth:`PaymentProcessor.save_card`
and keeps only what comes back (:class:`SavedCard`: a token, brand, last four digits,
expiry); the number and CVC are never stored or logged (``repr`` hides them).
Charges carry an idempotency key: the engine may ask twice for the same charge (two
workers, a crash between charging and recording) and must be charged once.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

from tollway.errors import UnprocessableEntity

Brand = Literal["visa", "mastercard", "amex", "discover", "unknown"]


class CardDetails(msgspec.Struct, frozen=True):
    """A card as a customer typed it. Lives only in memory, for one call."""

    number: str
    """Digits, spaces or dashes as typed."""
    exp_month: int
    exp_year: int
    """Four digits."""
    cvc: str
    name: str = ""

    def __repr__(self) -> str:
        return f"CardDetails(number='…{self.number[-4:]}', exp={self.exp_month}/{self.exp_year})"

    __str__ = __repr__

    def __rich_repr__(self) -> list[tuple[str, Any]]:
        """What rich (tracebacks, consoles) shows instead of every field."""
        return [
            ("number", f"…{self.number[-4:]}"),
            ("exp_month", self.exp_month),
            ("exp_year", self.exp_year),
        ]


class SavedCard(msgspec.Struct, frozen=True):
    """What the processor kept and the gateway may store: never the number."""

    token: str
    """The processor's reference to charge the card later."""
    brand: Brand
    last4: str
    exp_month: int
    exp_year: int


class Charge(msgspec.Struct, frozen=True):
    """The outcome of one charge: ``succeeded`` or ``failed`` with a decline code."""

    id: str
    status: Literal["succeeded", "failed"]
    amount_cents: int
    currency: str
    failure_code: str | None = None
    """``card_declined``, ``insufficient_funds``, ``expired_card``, ``processing_error``."""
    failure_message: str | None = None
    """For the customer: "Your card was declined."."""

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"


class CardError(UnprocessableEntity):
    """The processor refused a card (422, the spec's "payment processor validation
    failed"): invalid details when saving, or a declined charge made in a request."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class PaymentProcessor(Protocol):
    async def save_card(self, card: CardDetails) -> SavedCard:
        """Validate ``card`` and keep it for later charges; :class:`CardError` when the
        details are invalid or the card is refused outright."""
        ...

    async def charge(
        self,
        token: str,
        *,
        amount_cents: int,
        currency: str,
        idempotency_key: str,
        description: str,
    ) -> Charge:
        """Charge a saved card. A decline is a :class:`Charge` with ``status="failed"``
        (not an exception): the engine records failures. The same ``idempotency_key``
        returns the first call's :class:`Charge` and charges nothing more."""
        ...

    async def refund(self, charge_id: str) -> None:
        """Give a succeeded charge back in full (the engine refunds a charge whose
        bookkeeping then failed); refunding twice refunds once."""
        ...

    async def forget_card(self, token: str) -> None:
        """Stop keeping a saved card (its payment method was removed)."""
        ...
