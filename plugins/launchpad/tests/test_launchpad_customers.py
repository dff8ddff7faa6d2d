"""Customers over HTTP: registering, signing in, the signed-in customer and their token,
reading a customer, and isolation between workspaces."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from launchpad_client import PASSWORD, open_launchpad
from sqlalchemy import select

from tollway.testing import ProductClientFactory, emitted, subscribe
from tollway_launchpad.models import Customer
from tollway_launchpad.product import CUSTOMER_CREATED

TOKEN = "X-Customer-Token"
WRONG = {"detail": "Invalid email or password"}


async def test_register_answers_the_customer_and_a_token(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        registered = await launchpad.register("Ada@Example.com", full_name="  Ada Lovelace ")
        customer = registered["customer"]
        assert customer == {
            "id": customer["id"],
            "email": "Ada@Example.com",
            "full_name": "Ada Lovelace",
            "is_active": True,
            "created_at": customer["created_at"],
        }
        assert datetime.fromisoformat(customer["created_at"]).tzinfo is not None
        assert await launchpad.call("GET", f"/customers/{customer['id']}") == customer
        me = await launchpad.call("GET", "/customers/me", headers={TOKEN: registered["token"]})
        brief = {key: customer[key] for key in ("id", "email", "full_name")}
        assert me == {"customer": brief, "subscription": None}


async def test_the_password_is_kept_as_an_argon2id_hash(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        registered = await launchpad.register(full_name=None)
        assert registered["customer"]["full_name"] is None
        async with launchpad.gateway.database.transaction() as session:
            stored = await session.scalar(
                select(Customer.password_hash).where(Customer.id == registered["customer"]["id"])
            )
        assert stored is not None
        assert stored.startswith("$argon2id$")
        assert PASSWORD not in stored


async def test_an_email_is_unique_within_a_workspace_ignoring_case(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        first = await launchpad.register("ada@example.com")
        error = await launchpad.call(
            "POST",
            "/customers/register",
            json={"email": "ADA@example.COM", "password": "another password"},
            expect=409,
        )
        assert error == {"detail": "A customer with email ADA@example.COM is already registered"}
        # Another workspace's customer of the same address is another customer.
        theirs = await launchpad.register("ada@example.com", by=launchpad.other)
        assert theirs["customer"]["id"] != first["customer"]["id"]
        signed_in = await launchpad.call(
            "POST",
            "/customers/login",
            json={"email": "ada@example.com", "password": PASSWORD},
            by=launchpad.other,
        )
        assert signed_in["customer"]["id"] == theirs["customer"]["id"]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"password": PASSWORD}, "missing required field `email`"),
        ({"email": "ada@example.com"}, "missing required field `password`"),
        ({"email": "ada@example.com", "password": "1234567"}, "password"),
        ({"email": "ada", "password": PASSWORD}, "email"),
        ({"email": "ada@", "password": PASSWORD}, "email"),
        ({"email": "ada lovelace@example.com", "password": PASSWORD}, "email"),
        ({"email": "a@b@example.com", "password": PASSWORD}, "email"),
        ({"email": "ada@example.com", "password": 12345678}, "password"),
        ({"email": "ada@example.com", "password": PASSWORD, "full_name": "Ada\x00"}, "full_name"),
        ({"email": "ada@example.com", "password": PASSWORD, "is_active": False}, "unknown field"),
    ],
)
async def test_a_registration_outside_the_rules_is_400(
    product_client: ProductClientFactory, body: dict[str, Any], why: str
) -> None:
    async with open_launchpad(product_client) as launchpad:
        error = await launchpad.call("POST", "/customers/register", json=body, expect=400)
        assert error["detail"].startswith("Invalid request body")
        assert why in error["detail"]


async def test_login_signs_in_with_the_address_in_any_case(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        registered = await launchpad.register("ada@example.com")
        signed_in = await launchpad.call(
            "POST", "/customers/login", json={"email": "ADA@EXAMPLE.com", "password": PASSWORD}
        )
        customer = registered["customer"]
        assert signed_in["customer"] == {
            "id": customer["id"],
            "email": "ada@example.com",
            "full_name": "Ada Lovelace",
        }
        me = await launchpad.call("GET", "/customers/me", headers={TOKEN: signed_in["token"]})
        assert me["customer"] == signed_in["customer"]


async def test_a_wrong_password_and_an_unknown_address_get_the_same_answer(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        await launchpad.register("ada@example.com")
        for body in (
            {"email": "ada@example.com", "password": "wrong password"},
            {"email": "nobody@example.com", "password": PASSWORD},
            {"email": "not an address", "password": PASSWORD},
        ):
            assert await launchpad.call("POST", "/customers/login", json=body, expect=401) == WRONG
        # Another workspace's customer does not sign in here.
        theirs = {"email": "grace@example.com", "password": PASSWORD}
        await launchpad.register("grace@example.com", by=launchpad.other)
        assert await launchpad.call("POST", "/customers/login", json=theirs, expect=401) == WRONG
        error = await launchpad.call("POST", "/customers/login", json={"email": "a"}, expect=400)
        assert "password" in error["detail"]
        nul = {"email": "ada@example.com\x00", "password": PASSWORD}
        error = await launchpad.call("POST", "/customers/login", json=nul, expect=400)
        assert "email" in error["detail"]


async def test_me_needs_a_token_of_this_workspace_and_product(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        ours = await launchpad.register()
        customer_id = str(ours["customer"]["id"])
        theirs = await launchpad.register(by=launchpad.other)
        tokens = await launchpad.gateway.customer_tokens()
        account = launchpad.owner.account_id
        refusals = {
            "missing": None,
            "garbage": "not.a.token",
            "another workspace's": theirs["token"],
            "another product's": tokens.issue(
                account_id=account, product="pos", customer_id=customer_id
            ),
            "expired": tokens.issue(
                account_id=account, product="launchpad", customer_id=customer_id, ttl=-60
            ),
            "of nobody": tokens.issue(account_id=account, product="launchpad", customer_id="999"),
            "of no id": tokens.issue(account_id=account, product="launchpad", customer_id="x1"),
        }
        for what, token in refusals.items():
            headers = {TOKEN: token} if token is not None else {}
            response = await launchpad.client.get(
                "/v1/launchpad/customers/me", headers={**launchpad.owner.headers, **headers}
            )
            assert response.status_code == 401, what
            assert TOKEN in response.json()["detail"], what
        # The other workspace's token works with its own key.
        me = await launchpad.call(
            "GET", "/customers/me", headers={TOKEN: theirs["token"]}, by=launchpad.other
        )
        assert me["customer"]["id"] == theirs["customer"]["id"]


async def test_a_deactivated_customer_is_signed_out(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        registered = await launchpad.register()
        async with launchpad.gateway.database.transaction() as session:
            customer = await session.get(Customer, registered["customer"]["id"])
            assert customer is not None
            customer.is_active = False
        headers = {TOKEN: registered["token"]}
        await launchpad.call("GET", "/customers/me", headers=headers, expect=401)
        body = {"email": "ada@example.com", "password": PASSWORD}
        assert await launchpad.call("POST", "/customers/login", json=body, expect=401) == WRONG
        shown = await launchpad.call("GET", f"/customers/{registered['customer']['id']}")
        assert shown["is_active"] is False


async def test_another_workspace_s_customer_is_not_found(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        theirs = (await launchpad.register(by=launchpad.other))["customer"]
        error = await launchpad.call("GET", f"/customers/{theirs['id']}", expect=404)
        assert error == {"detail": f"Customer {theirs['id']} not found"}
        await launchpad.call("GET", "/customers/2147483647", expect=404)
        await launchpad.call("GET", "/customers/0", expect=400)


async def test_registering_emits_customer_created(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        await subscribe(launchpad.gateway, launchpad.owner.account_id, [CUSTOMER_CREATED])
        registered = await launchpad.register()
        await launchpad.call(
            "POST",
            "/customers/register",
            json={"email": "ADA@example.com", "password": PASSWORD},
            expect=409,
        )
        await launchpad.register(by=launchpad.other)  # the other workspace has no subscriber
        assert await emitted(launchpad.gateway) == [
            (launchpad.owner.account_id, CUSTOMER_CREATED, registered["customer"])
        ]
