"""``Idempotency-Key`` on the creating requests: a plan or a customer is made once however
often the request is sent, and a key reused for another request is refused."""

from __future__ import annotations

from launchpad_client import PASSWORD, PRO, open_launchpad

from tollway.testing import ProductClientFactory, emitted, subscribe
from tollway_launchpad.product import CUSTOMER_CREATED

KEY = {"Idempotency-Key": "create-pro-plan-1"}


async def test_a_plan_is_created_once_per_key(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        url, headers = "/v1/launchpad/plans", {**launchpad.owner.headers, **KEY}
        first = await launchpad.client.post(url, json=PRO, headers=headers)
        again = await launchpad.client.post(url, json=PRO, headers=headers)
        assert (first.status_code, again.status_code) == (201, 201)
        assert again.json() == first.json()
        assert again.headers["Idempotent-Replayed"] == "true"
        assert "Idempotent-Replayed" not in first.headers
        assert await launchpad.call("GET", "/plans") == {"plans": [first.json()]}
        other = await launchpad.client.post(url, json={**PRO, "slug": "team"}, headers=headers)
        assert other.status_code == 409
        assert "Idempotency-Key" in other.json()["detail"]
        # Keys are the workspace's own: another workspace's same key is a new request.
        theirs = await launchpad.client.post(
            url, json=PRO, headers={**launchpad.other.headers, **KEY}
        )
        assert theirs.status_code == 201
        assert "Idempotent-Replayed" not in theirs.headers


async def test_a_customer_is_registered_once_per_key(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        await subscribe(launchpad.gateway, launchpad.owner.account_id, [CUSTOMER_CREATED])
        url = "/v1/launchpad/customers/register"
        headers = {**launchpad.owner.headers, "Idempotency-Key": "signup-ada"}
        body = {"email": "ada@example.com", "password": PASSWORD}
        first = await launchpad.client.post(url, json=body, headers=headers)
        again = await launchpad.client.post(url, json=body, headers=headers)
        assert (first.status_code, again.status_code) == (201, 201)
        assert again.json() == first.json()
        assert again.headers["Idempotent-Replayed"] == "true"
        assert len(await emitted(launchpad.gateway)) == 1
        # Without the key, the same request is a second registration: 409.
        await launchpad.call("POST", "/customers/register", json=body, expect=409)


async def test_a_malformed_key_is_400(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        headers = {"Idempotency-Key": "x" * 256}
        error = await launchpad.call("POST", "/plans", json=PRO, headers=headers, expect=400)
        assert "Idempotency-Key" in error["detail"]
        assert await launchpad.call("GET", "/plans") == {"plans": []}
