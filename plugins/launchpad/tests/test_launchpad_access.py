"""Who may call what: each endpoint's scope (a key without it is 403 naming it), keys
and subscriptions (401, 403), and only this product's scopes."""

from __future__ import annotations

from typing import Any

import pytest
from launchpad_client import open_launchpad

from tollway.testing import ProductClientFactory
from tollway_launchpad.product import (
    CHECKOUT_WRITE,
    CUSTOMERS_READ,
    CUSTOMERS_WRITE,
    PLANS_READ,
    PLANS_WRITE,
    SCOPES,
    SUBSCRIPTIONS_READ,
    SUBSCRIPTIONS_WRITE,
)

ENDPOINTS: list[tuple[str, str, str, dict[str, Any] | None]] = [
    ("GET", "/plans", PLANS_READ, None),
    ("GET", "/plans/1", PLANS_READ, None),
    ("POST", "/plans", PLANS_WRITE, {"name": "Pro"}),
    ("PATCH", "/plans/1", PLANS_WRITE, {}),
    ("POST", "/customers/register", CUSTOMERS_WRITE, {}),
    ("POST", "/customers/login", CUSTOMERS_WRITE, {}),
    ("GET", "/customers/me", CUSTOMERS_READ, None),
    ("GET", "/customers/1", CUSTOMERS_READ, None),
    ("GET", "/subscriptions/1", SUBSCRIPTIONS_READ, None),
    ("PATCH", "/subscriptions/1", SUBSCRIPTIONS_WRITE, {}),
    ("DELETE", "/subscriptions/1", SUBSCRIPTIONS_WRITE, None),
    ("GET", "/checkout/1", PLANS_READ, None),
    ("POST", "/checkout/1/session", CHECKOUT_WRITE, {}),
]


@pytest.mark.parametrize(("method", "path", "scope", "body"), ENDPOINTS)
async def test_each_endpoint_needs_its_scope(
    product_client: ProductClientFactory,
    method: str,
    path: str,
    scope: str,
    body: dict[str, Any] | None,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        others = [name for name in SCOPES if name != scope]
        lacking = await launchpad.product_client.tenant("initech", scopes=others)
        error = await launchpad.call(method, path, json=body, by=lacking, expect=403)
        assert error == {"detail": f"API key lacks the required scope '{scope}'"}
        holding = await launchpad.product_client.tenant("umbrella", scopes=[scope])
        response = await launchpad.client.request(
            method, f"/v1/launchpad{path}", json=body, headers=holding.headers
        )
        # Past admission (``/customers/me`` then asks for the customer's token).
        assert response.status_code != 403, response.text
        assert "API key" not in response.text


async def test_keys_and_subscriptions(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        response = await launchpad.client.get("/v1/launchpad/plans")
        assert response.status_code == 401
        assert response.json()["detail"].startswith("Missing API key")
        bad = {"Authorization": "Bearer tw_00000000_" + "0" * 32}
        assert (await launchpad.client.get("/v1/launchpad/plans", headers=bad)).status_code == 401
        unsubscribed = await launchpad.gateway.accounts.create_account("hooli", {})
        key = await launchpad.gateway.accounts.create_key(
            unsubscribed, name="hooli", scopes=list(SCOPES)
        )
        headers = {"Authorization": f"Bearer {key.key}"}
        response = await launchpad.client.get("/v1/launchpad/plans", headers=headers)
        assert response.status_code == 403
        assert response.json() == {"detail": "No active subscription to the 'launchpad' product"}
