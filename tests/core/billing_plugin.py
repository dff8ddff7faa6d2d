"""A product that bills, for the billing engine's own tests: the ``shop`` ledger, the
billing events, and a payment processor the test can make refuse every charge (the
local processor underneath: a replacement through the hook, like a real adapter)."""

from __future__ import annotations

from collections.abc import Callable

from tollway import Gateway, hookimpl
from tollway.billing import Charge, Ledger, PaymentProcessor, SavedCard
from tollway.billing.cards import LocalCardProcessor
from tollway.billing.processor import CardDetails

LEDGER = "shop"
PREFIX = "shop."
"""Billing events are the launchpad product's names, installed alongside."""
EVENTS = (
    "subscription.created",
    "subscription.updated",
    "subscription.canceled",
    "subscription.renewed",
    "invoice.paid",
    "invoice.failed",
)


class SwitchableProcessor:
    """The local processor, except that every charge fails while ``refusing``."""

    def __init__(self, inner: LocalCardProcessor) -> None:
        self.inner = inner
        self.refusing = False
        self.charges: list[tuple[str, int]] = []
        """Every charge asked for: (idempotency key, amount)."""

    async def save_card(self, card: CardDetails) -> SavedCard:
        return await self.inner.save_card(card)

    async def charge(
        self,
        token: str,
        *,
        amount_cents: int,
        currency: str,
        idempotency_key: str,
        description: str,
    ) -> Charge:
        self.charges.append((idempotency_key, amount_cents))
        if self.refusing:
            return Charge(
                id="",
                status="failed",
                amount_cents=amount_cents,
                currency=currency,
                failure_code="card_declined",
                failure_message="Your card was declined.",
            )
        return await self.inner.charge(
            token,
            amount_cents=amount_cents,
            currency=currency,
            idempotency_key=idempotency_key,
            description=description,
        )

    async def refund(self, charge_id: str) -> None:
        await self.inner.refund(charge_id)

    async def forget_card(self, token: str) -> None:
        await self.inner.forget_card(token)


class ShopPlugin:
    def __init__(
        self, retry_days: tuple[int, ...] = (1, 3, 5), *, switchable: bool = False
    ) -> None:
        self.retry_days = retry_days
        self.switchable = switchable

    @hookimpl
    def tollway_register_events(self, register: Callable[[str, str], None]) -> None:
        for event in EVENTS:
            register(PREFIX + event, event)

    @hookimpl
    def tollway_register_services(
        self, register: Callable[[object], None], gateway: Gateway
    ) -> None:
        gateway.billing.add_ledger(Ledger(LEDGER, retry_days=self.retry_days, event_prefix=PREFIX))

    @hookimpl
    def tollway_payment_processor(self, gateway: Gateway) -> PaymentProcessor | None:
        if not self.switchable:
            return None
        return SwitchableProcessor(LocalCardProcessor(gateway.database))
