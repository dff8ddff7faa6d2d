"""Who may call what: every route's scope, held alone or granted by one of the developer
product's key-scope names (``pos:read``, ``orders:read``...), a 403 naming the scope a
key lacks; reports refusing a customer's token whatever the key holds; and customer
routes needing both the scope and the token."""

from __future__ import annotations

from typing import Any

import pytest
from pos_client import CUSTOMER_HEADER, customer, order, pos_client, product, signed_in

from tollway.testing import ProductClient, ProductClientFactory
from tollway_pos.product import (
    CATALOG_READ,
    CATALOG_WRITE,
    CUSTOMERS_READ,
    CUSTOMERS_WRITE,
    INVENTORY_READ,
    INVENTORY_WRITE,
    KEY_SCOPES,
    ORDERS_READ,
    ORDERS_WRITE,
    REPORTS_READ,
    SCOPES,
    WEBHOOKS_WRITE,
)

PRODUCT = "prod_0000000000000000"
ORDER = "ord_0000000000000000"
ITEMS = [{"product_id": PRODUCT, "qty": 1}]
SALES = "/reports/sales?date_from=2026-01-01&date_to=2026-01-31"
ROUTES: list[tuple[str, str, str, dict[str, Any] | None]] = [
    ("GET", "/products", CATALOG_READ, None),
    ("GET", f"/products/{PRODUCT}", CATALOG_READ, None),
    ("GET", f"/products/{PRODUCT}/stock", CATALOG_READ, None),
    ("GET", "/categories", CATALOG_READ, None),
    ("POST", "/categories", CATALOG_WRITE, {"name": "Burgers"}),
    ("POST", "/products", CATALOG_WRITE, {"name": "Fries", "price_cents": 1}),
    ("PATCH", f"/products/{PRODUCT}", CATALOG_WRITE, {}),
    ("POST", "/coupons", CATALOG_WRITE, {"code": "X", "type": "fixed", "amount_cents": 1}),
    ("GET", "/inventory", INVENTORY_READ, None),
    ("GET", f"/inventory/{PRODUCT}", INVENTORY_READ, None),
    ("POST", f"/inventory/{PRODUCT}/adjustments", INVENTORY_WRITE, {"delta": 1}),
    ("POST", "/customers/register", CUSTOMERS_WRITE, {}),
    ("POST", "/customers/login", CUSTOMERS_WRITE, {}),
    ("GET", "/customers/me", CUSTOMERS_READ, None),
    ("GET", "/customers/me/orders", CUSTOMERS_READ, None),
    ("POST", "/cart/calculate", ORDERS_WRITE, {"items": ITEMS}),
    ("POST", "/orders", ORDERS_WRITE, {"order_type": "takeaway", "items": ITEMS}),
    ("GET", f"/orders/{ORDER}", ORDERS_READ, None),
    ("GET", "/orders", ORDERS_READ, None),
    ("PATCH", f"/orders/{ORDER}", ORDERS_WRITE, {"status": "confirmed"}),
    ("GET", SALES, REPORTS_READ, None),
    ("GET", "/reports/daily/2026-01-01", REPORTS_READ, None),
    ("POST", "/webhooks", WEBHOOKS_WRITE, {"url": "https://127.0.0.1/h", "events": ["x"]}),
]
"""Every route but the live streams' (which stay open once admitted; their scopes are
tested with them), with a body that gets past admission."""


def granted(scope: str) -> set[str]:
    """The route scopes a key holding ``scope`` alone may call."""
    return {scope, *(KEY_SCOPES[scope][1] if scope in KEY_SCOPES else ())}


def test_the_key_scope_names_grant_what_the_spec_says() -> None:
    reads = {scope for scope in SCOPES if scope.endswith(":read")}
    assert REPORTS_READ in reads
    assert {name: set(grants) for name, (_, grants) in KEY_SCOPES.items()} == {
        "pos:read": reads,
        "pos:write": set(SCOPES) - reads,
        "orders:read": {ORDERS_READ},
        "orders:write": {ORDERS_WRITE},
        "customers:read": {CUSTOMERS_READ},
        "customers:write": {CUSTOMERS_WRITE},
        "catalog:read": {CATALOG_READ},
        "inventory:read": {INVENTORY_READ},
        "inventory:write": {INVENTORY_WRITE},
        "reports:read": {REPORTS_READ},
    }


@pytest.mark.parametrize("scope", [*SCOPES, *KEY_SCOPES])
async def test_a_key_reaches_exactly_the_routes_its_scope_grants(
    product_client: ProductClientFactory, scope: str
) -> None:
    async with pos_client(product_client) as pos:
        key = await pos.tenant("initech", scopes=[scope])
        for method, path, needed, body in ROUTES:
            response = await pos.client.request(
                method, f"/v1/pos{path}", json=body, headers=key.headers
            )
            if needed in granted(scope):
                # Past admission: the route's own answer (404, 400, 401 for no token...).
                assert response.status_code != 403, (method, path, response.text)
                assert "API key" not in response.text, (method, path)
            else:
                assert response.status_code == 403, (method, path, response.text)
                assert response.json() == {
                    "detail": f"API key lacks the required scope '{needed}'"
                }, (method, path)


async def test_orders_read_lists_orders_but_cannot_place_one(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        placed = await order(pos, [{"product_id": (await product(pos))["id"], "qty": 1}])
        reader = await scoped_key_of_owner(pos, ["orders:read"])
        listing = await pos.client.get("/v1/pos/orders", headers=reader)
        assert listing.json() == {"orders": [placed], "total": 1, "offset": 0}
        shown = await pos.client.get(f"/v1/pos/orders/{placed['id']}", headers=reader)
        assert shown.json() == {"order": placed}
        body = {"order_type": "takeaway", "items": [{"product_id": PRODUCT, "qty": 1}]}
        refused = await pos.client.post("/v1/pos/orders", json=body, headers=reader)
        assert refused.status_code == 403
        assert refused.json() == {"detail": "API key lacks the required scope 'pos:orders:write'"}
        assert (await pos.call("GET", "/orders"))["total"] == 1


async def scoped_key_of_owner(pos: ProductClient, scopes: list[str]) -> dict[str, str]:
    """Headers of another key of the owner's store holding ``scopes``."""
    created = await pos.gateway.accounts.create_key(
        pos.owner.account_id, name="-".join(scopes), scopes=scopes
    )
    return {"Authorization": f"Bearer {created.key}"}


async def test_pos_read_reads_everything_and_writes_nothing(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        fries = await product(pos, "Fries", stock_qty=3)
        reader = await scoped_key_of_owner(pos, ["pos:read"])
        listing = await pos.client.get("/v1/pos/products", headers=reader)
        assert listing.json()["products"] == [fries]
        for path in ("/reports/daily/2026-01-01", "/inventory", "/categories", "/orders"):
            response = await pos.client.get(f"/v1/pos{path}", headers=reader)
            assert response.status_code == 200, (path, response.text)
        for path, body, needed in (
            ("/products", {"name": "Cola", "price_cents": 1}, CATALOG_WRITE),
            (f"/inventory/{fries['id']}/adjustments", {"delta": 1}, INVENTORY_WRITE),
        ):
            response = await pos.client.post(f"/v1/pos{path}", json=body, headers=reader)
            assert response.status_code == 403
            assert response.json() == {"detail": f"API key lacks the required scope '{needed}'"}
        assert (await pos.call("GET", f"/products/{fries['id']}")) == fries


async def test_catalog_read_lists_the_products(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        fries = await product(pos, "Fries")
        reader = await scoped_key_of_owner(pos, ["catalog:read"])
        listing = await pos.client.get("/v1/pos/products", headers=reader)
        assert listing.json() == {"products": [fries], "total": 1, "offset": 0}
        refused = await pos.client.get("/v1/pos/inventory", headers=reader)
        assert refused.status_code == 403


@pytest.mark.parametrize("scopes", [[REPORTS_READ], ["pos:read"], list(SCOPES)])
async def test_reports_refuse_a_customer_token_whatever_the_key_holds(
    product_client: ProductClientFactory, scopes: list[str]
) -> None:
    async with pos_client(product_client) as pos:
        registered = await customer(pos)
        key = await scoped_key_of_owner(pos, scopes)
        back_office = {"detail": "Reports are back office only: send them no X-Customer-Token"}
        for path in ("/reports/daily/2026-01-01", SALES):
            for token in (registered["token"], registered["realtime_token"], "anything"):
                headers = {**key, CUSTOMER_HEADER: token}
                response = await pos.client.get(f"/v1/pos{path}", headers=headers)
                assert response.status_code == 403, (path, response.text)
                assert response.json() == back_office
            assert (await pos.client.get(f"/v1/pos{path}", headers=key)).status_code == 200


async def test_customer_routes_need_the_scope_and_the_token(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        registered = await customer(pos)
        both = await scoped_key_of_owner(pos, [CUSTOMERS_READ])
        other_scopes = await scoped_key_of_owner(pos, [s for s in SCOPES if s != CUSTOMERS_READ])
        for path in ("/v1/pos/customers/me", "/v1/pos/customers/me/orders"):
            token = signed_in(registered)
            assert (await pos.client.get(path, headers={**both, **token})).status_code == 200
            no_token = await pos.client.get(path, headers=both)
            assert no_token.status_code == 401
            no_scope = await pos.client.get(path, headers={**other_scopes, **token})
            assert no_scope.status_code == 403
            assert no_scope.json() == {
                "detail": f"API key lacks the required scope '{CUSTOMERS_READ}'"
            }
            nothing = await pos.anonymous.get(path, headers=token)
            assert nothing.status_code == 401
            assert nothing.json()["detail"].startswith("Missing API key")
