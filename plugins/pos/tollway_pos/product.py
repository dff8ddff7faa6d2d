"""What the point of sale product is: the API's descriptor, the scopes of its keys (and
the developer key-scope names that grant them), the webhook events it emits and the
gateway's plans for it. Routes, services and the plugin take them from here."""

from __future__ import annotations

from tollway import Plan, Product

PRODUCT = Product(
    name="pos",
    prefix="/v1/pos",
    title="Point of sale",
    contract="pos.yaml",
)

LIVE_AUDIENCE = "pos-live"
"""The audience of realtime tokens: a token for the live streams only, never accepted
as an ``X-Customer-Token``."""

CATALOG_READ = "pos:catalog:read"
CATALOG_WRITE = "pos:catalog:write"
INVENTORY_READ = "pos:inventory:read"
INVENTORY_WRITE = "pos:inventory:write"
CUSTOMERS_READ = "pos:customers:read"
CUSTOMERS_WRITE = "pos:customers:write"
ORDERS_READ = "pos:orders:read"
ORDERS_WRITE = "pos:orders:write"
REPORTS_READ = "pos:reports:read"
WEBHOOKS_WRITE = "pos:webhooks:write"
SCOPES = {
    CATALOG_READ: "Read the store's categories and active products, and a product's stock",
    CATALOG_WRITE: "Create categories, create and change products, create coupons",
    INVENTORY_READ: "Read the store's inventory and follow its live stock stream",
    INVENTORY_WRITE: "Adjust or set a product's stock",
    CUSTOMERS_READ: "Read the signed-in customer (with a customer token) and their orders",
    CUSTOMERS_WRITE: "Register store customers and sign them in (issues customer tokens)",
    ORDERS_READ: "Read and list the store's orders and follow an order live",
    ORDERS_WRITE: "Calculate carts, create orders and move them through their statuses",
    REPORTS_READ: "Read the store's sales reports and end-of-day summaries (back office)",
    WEBHOOKS_WRITE: "Register webhook endpoints for the store's events",
}

_READS = tuple(scope for scope in SCOPES if scope.endswith(":read"))
_WRITES = tuple(scope for scope in SCOPES if scope.endswith(":write"))
KEY_SCOPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "pos:read": ("Every point of sale read, reports included", _READS),
    "pos:write": ("Every point of sale write", _WRITES),
    "orders:read": ("Read orders (pos:orders:read)", (ORDERS_READ,)),
    "orders:write": ("Price carts and place and move orders (pos:orders:write)", (ORDERS_WRITE,)),
    "customers:read": ("Read the signed-in customer (pos:customers:read)", (CUSTOMERS_READ,)),
    "customers:write": ("Register and sign in customers (pos:customers:write)", (CUSTOMERS_WRITE,)),
    "catalog:read": ("Read the catalog (pos:catalog:read)", (CATALOG_READ,)),
    "inventory:read": ("Read the inventory (pos:inventory:read)", (INVENTORY_READ,)),
    "inventory:write": ("Adjust stock (pos:inventory:write)", (INVENTORY_WRITE,)),
    "reports:read": ("Read sales reports (pos:reports:read)", (REPORTS_READ,)),
}
"""The developer product's key-scope names (spec 5.2): each is a scope of its own
that grants the ``pos:*`` scopes listed (docs/spec-decisions.md)."""

ORDER_CREATED = "order.created"
ORDER_UPDATED = "order.updated"
ORDER_COMPLETED = "order.completed"
ORDER_CANCELLED = "order.cancelled"
LOW_STOCK = "inventory.low_stock"
EVENTS = {
    ORDER_CREATED: "An order was placed",
    ORDER_UPDATED: "An order moved to another status",
    ORDER_COMPLETED: "An order was delivered",
    ORDER_CANCELLED: "An order was cancelled and its stock given back",
    LOW_STOCK: "A product's stock fell to its low-stock threshold",
}

PLANS = (
    Plan("free", requests_per_day=1_000, rank=0, description="Try the point of sale out"),
    Plan("pro", requests_per_day=100_000, rank=1, description="A busy store"),
    Plan("business", requests_per_day=1_000_000, rank=2, description="Many tills and apps"),
)
