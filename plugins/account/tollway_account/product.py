"""What the account and billing product is: the API's descriptor and the hosted "save a
card" page's, the scopes of its keys and the gateway's plans for it. Here the platform
bills its tenants (the gateway's accounts) for their product subscriptions, on the
billing engine's ``platform`` ledger, which the core owns because the pipeline admits
by it."""

from __future__ import annotations

from tollway import Plan, Product
from tollway.billing import PLATFORM

PRODUCT = Product(
    name="account",
    prefix="/v1/account",
    title="Account and billing",
    contract="account.yaml",
)

CARDS = Product(
    name="account-cards",
    prefix="/account/cards",
    title="Save a card",
    keyed=False,
    contract="account-cards.yaml",
)
"""The hosted page saving a tenant's card, ``/account/cards/<session id>``: HTML, no
API key (the session id in the URL is the credential), limited per client address."""

INVOICES = Product(
    name="account-invoices",
    prefix="/account/invoices",
    title="Invoice PDFs",
    keyed=False,
    contract="account-invoices.yaml",
)
"""Invoices' PDFs, ``/account/invoices/<invoice id>/pdf?expires=&signature=``: no API
key (the signed, expiring link the invoice list gives is the credential), limited per
client address."""

LEDGER = PLATFORM
"""The billing engine's ledger the platform bills its tenants on (the core's)."""

PROFILE_READ = "account:profile:read"
PROFILE_WRITE = "account:profile:write"
SUBSCRIPTIONS_READ = "account:subscriptions:read"
BILLING_READ = "account:billing:read"
BILLING_WRITE = "account:billing:write"
SCOPES = {
    PROFILE_READ: "Read the account's own profile",
    PROFILE_WRITE: "Change the account's name, company and tax id",
    SUBSCRIPTIONS_READ: "Read the account's product subscriptions",
    BILLING_READ: "Read the account's invoices (with their PDFs) and saved cards",
    BILLING_WRITE: "Start saving a card, choose the default card, remove a card",
}

PLANS = (Plan("standard", requests_per_day=10_000, rank=0, description="The account's own API"),)

ANONYMOUS = "anonymous"
"""The card page's only plan: every visitor, counted per client address."""
CARDS_PLANS = (
    Plan(
        ANONYMOUS,
        requests_per_day=0,
        description="Tenants saving a card on the hosted page: limits per client address",
        limits={"cards_per_minute": 60},
    ),
)
INVOICES_PLANS = (
    Plan(
        ANONYMOUS,
        requests_per_day=0,
        description="Invoice PDFs opened from their signed links: limits per client address",
        limits={"pdfs_per_minute": 60},
    ),
)
