"""Billing: plans' prices, subscriptions, invoices, payment methods and dunning, built
once for every product that sells (launchpad: a workspace billing its customers;
account: the platform billing its tenants), and the payment processor hook.

Products reading the engine's rows in bulk (a list endpoint) select from its tables
(:class:`BillingSubscription`, :class:`BillingInvoice`, :class:`BillingPaymentMethod`)
with :class:`tollway.Reads`, filtered by ledger, account and customer.

A product registers its :class:`Ledger` with ``gateway.billing.add_ledger`` and works
through ``gateway.billing.book(session, ledger, account_id)``; see
:mod:`tollway.billing.engine` for the states and docs/billing.md for the rules.
"""

from tollway.billing.book import Book
from tollway.billing.cards import LocalCardProcessor
from tollway.billing.engine import BillingEngine
from tollway.billing.models import BillingInvoice, BillingPaymentMethod, BillingSubscription
from tollway.billing.money import decimals, major, money
from tollway.billing.periods import INTERVALS, Interval, period_end
from tollway.billing.platform import ADMITTED, ADMITTED_PLANS, PLATFORM, TENANT
from tollway.billing.processor import (
    Brand,
    CardDetails,
    CardError,
    Charge,
    PaymentProcessor,
    SavedCard,
)
from tollway.billing.records import (
    LIVE,
    ConcurrentChange,
    IllegalTransition,
    Invoice,
    Ledger,
    PaymentMethod,
    RunReport,
    Status,
    Subscription,
    Terms,
)
from tollway.billing.wallet import Wallet

__all__ = [
    "ADMITTED",
    "ADMITTED_PLANS",
    "INTERVALS",
    "LIVE",
    "PLATFORM",
    "TENANT",
    "BillingEngine",
    "BillingInvoice",
    "BillingPaymentMethod",
    "BillingSubscription",
    "Book",
    "Brand",
    "CardDetails",
    "CardError",
    "Charge",
    "ConcurrentChange",
    "IllegalTransition",
    "Interval",
    "Invoice",
    "Ledger",
    "LocalCardProcessor",
    "PaymentMethod",
    "PaymentProcessor",
    "RunReport",
    "SavedCard",
    "Status",
    "Subscription",
    "Terms",
    "Wallet",
    "decimals",
    "major",
    "money",
    "period_end",
]
