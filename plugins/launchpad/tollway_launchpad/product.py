"""What the subscription billing product (launchpad) is: the API's descriptor and the
hosted checkout page's, the scopes of its keys, the webhook events it emits and the
gateway's plans for it. Routes, services and the plugin take them from here."""

from __future__ import annotations

from tollway import Plan, Product

PRODUCT = Product(
    name="launchpad",
    prefix="/v1/launchpad",
    title="Subscription billing",
    contract="launchpad.yaml",
)

CHECKOUT = Product(
    name="launchpad-checkout",
    prefix="/checkout",
    title="Hosted checkout",
    keyed=False,
    contract="launchpad-checkout.yaml",
)
"""The hosted checkout page, ``/checkout/<session id>``: HTML, no API key (the session
id in the URL is the credential), limited per client address."""

LEDGER = PRODUCT.name
"""The billing engine's ledger of this product's subscriptions: a workspace (the
gateway's account) billing its own customers."""

PLANS_READ = "launchpad:plans:read"
PLANS_WRITE = "launchpad:plans:write"
CUSTOMERS_READ = "launchpad:customers:read"
CUSTOMERS_WRITE = "launchpad:customers:write"
SUBSCRIPTIONS_READ = "launchpad:subscriptions:read"
SUBSCRIPTIONS_WRITE = "launchpad:subscriptions:write"
CHECKOUT_WRITE = "launchpad:checkout:write"
SCOPES = {
    PLANS_READ: "List and read the workspace's plans, and a plan's checkout details",
    PLANS_WRITE: "Create and change the workspace's plans",
    CUSTOMERS_READ: "Read customers, and the signed-in customer with a customer token",
    CUSTOMERS_WRITE: "Register customers and sign them in (issues customer tokens)",
    SUBSCRIPTIONS_READ: "Read a customer's subscription status",
    SUBSCRIPTIONS_WRITE: "Change a customer's plan or interval, or cancel the subscription",
    CHECKOUT_WRITE: "Create hosted checkout sessions",
}

CUSTOMER_CREATED = "customer.created"
SUBSCRIPTION_CREATED = "subscription.created"
SUBSCRIPTION_UPDATED = "subscription.updated"
SUBSCRIPTION_CANCELED = "subscription.canceled"
SUBSCRIPTION_RENEWED = "subscription.renewed"
INVOICE_PAID = "invoice.paid"
INVOICE_FAILED = "invoice.failed"
EVENTS = {
    CUSTOMER_CREATED: "A customer registered",
    SUBSCRIPTION_CREATED: "A subscription was activated (or its trial started) by a paid checkout",
    SUBSCRIPTION_UPDATED: "A subscription's plan, interval or status changed",
    SUBSCRIPTION_CANCELED: "A subscription was canceled",
    SUBSCRIPTION_RENEWED: "A subscription renewed for another period",
    INVOICE_PAID: "An invoice was paid",
    INVOICE_FAILED: "An invoice's payment failed",
}

PLANS = (
    Plan("free", requests_per_day=1_000, rank=0, description="Try subscription billing out"),
    Plan("pro", requests_per_day=100_000, rank=1, description="A growing product's billing"),
    Plan("business", requests_per_day=1_000_000, rank=2, description="Billing at scale"),
)

ANONYMOUS = "anonymous"
"""The checkout page's only plan: every visitor, counted per client address."""
CHECKOUT_PLANS = (
    Plan(
        ANONYMOUS,
        requests_per_day=0,
        description="Customers paying on the hosted checkout page: limits per client address",
        limits={"checkout_per_minute": 60},
    ),
)
