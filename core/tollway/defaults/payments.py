"""Default payment processor: local card checks and Stripe's test cards, no card network."""

from __future__ import annotations

from tollway.billing.cards import LocalCardProcessor
from tollway.billing.processor import PaymentProcessor
from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl


@hookimpl(trylast=True)
def tollway_payment_processor(gateway: Gateway) -> PaymentProcessor:
    return LocalCardProcessor(gateway.database)
