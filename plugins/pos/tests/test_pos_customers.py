"""Store customers over HTTP: registering (the customer and both tokens, their audiences
and lifetimes), an address unique within a store ignoring case, the refusals, the
addresses with one default, signing in (any case; one answer for every failure), the
signed-in customer's profile and the tokens ``/customers/me`` refuses, and the
customer's own orders, newest first."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import jwt
import pytest
from pos_client import CUSTOMER_HEADER, PASSWORD, customer, order, pos_client, product, signed_in

from tollway.testing import ProductClient, ProductClientFactory

CUSTOMER_ID = re.compile(r"cus_[0-9A-Za-z]{16}")
ADDRESS_ID = re.compile(r"adr_[0-9A-Za-z]{16}")
WRONG = {"detail": "Invalid email or password"}
INVALID_TOKEN = {"detail": "X-Customer-Token is not a valid token for this product"}


def claims(token: str) -> dict[str, Any]:
    """A token's claims, read without checking its signature."""
    read: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return read


def expiry(token: str) -> str:
    """A token's ``exp`` as the API writes a time."""
    return datetime.fromtimestamp(claims(token)["exp"], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_register_answers_the_customer_and_both_tokens(
    product_client: ProductClientFactory,
) -> None:
    settings = {"customer_token_ttl": 7200, "realtime_token_ttl": 600}
    async with pos_client(product_client, settings=settings) as pos:
        registered = await customer(pos, "Ada@Example.com", full_name="  Ada Lovelace ")
        ada = registered["customer"]
        assert CUSTOMER_ID.fullmatch(ada["id"])
        assert registered == {
            "customer": {
                "id": ada["id"],
                "email": "Ada@Example.com",
                "full_name": "Ada Lovelace",
                "loyalty_points": 0,
            },
            "token": registered["token"],
            "token_expires_at": expiry(registered["token"]),
            "realtime_token": registered["realtime_token"],
            "realtime_token_expires_at": expiry(registered["realtime_token"]),
        }
        token, live = claims(registered["token"]), claims(registered["realtime_token"])
        account = pos.owner.account_id
        assert (token["sub"], token["acc"], token["aud"]) == (ada["id"], account, "tollway:pos")
        assert (live["sub"], live["acc"], live["aud"]) == (ada["id"], account, "tollway:pos-live")
        assert (token["exp"] - token["iat"], live["exp"] - live["iat"]) == (7200, 600)
        assert jwt.get_unverified_header(registered["token"])["alg"] == "HS256"


async def test_an_email_is_unique_within_a_store_ignoring_case(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        ours = await customer(pos, "ada@example.com")
        body = {"email": "ADA@example.COM", "password": "another password"}
        error = await pos.call("POST", "/customers/register", json=body, expect=409)
        assert error == {"detail": "A customer with email ADA@example.COM is already registered"}
        # Another store's customer of the same address is another customer.
        theirs = await customer(pos, "ADA@example.com", by=pos.other)
        assert theirs["customer"]["id"] != ours["customer"]["id"]
        login = {"email": "ada@EXAMPLE.com", "password": PASSWORD}
        signed = await pos.call("POST", "/customers/login", json=login, by=pos.other)
        assert signed["customer"] == theirs["customer"]
        signed = await pos.call("POST", "/customers/login", json=login)
        assert signed["customer"] == ours["customer"]


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"password": "1234567"}, "at `$.password`"),
        ({"email": "ada.example.com"}, "at `$.email`"),
        ({"email": "ada@example"}, "at `$.email`"),
        ({"email": "ada lovelace@example.com"}, "at `$.email`"),
        ({"email": " ada@example.com"}, "at `$.email`"),
        ({"phone": "call me"}, "at `$.phone`"),
        ({"full_name": "Ada\x00"}, "at `$.full_name`"),
        ({"loyalty_points": 5000}, "unknown field `loyalty_points`"),
        ({"addresses": [{"label": "home", "city": "London"}]}, "`line1`"),
        ({"addresses": [{"line1": "1 Main St", "city": "X", "zip": "1"}]}, "unknown field `zip`"),
        ({"addresses": [{"line1": "1 Main St", "city": "X"}] * 11}, "at `$.addresses`"),
    ],
)
async def test_a_registration_outside_the_rules_is_400(
    product_client: ProductClientFactory, fields: dict[str, Any], why: str
) -> None:
    async with pos_client(product_client) as pos:
        body = {"email": "ada@example.com", "password": PASSWORD, **fields}
        error = await pos.call("POST", "/customers/register", json=body, expect=400)
        assert error["detail"].startswith("Invalid request body: ")
        assert why in error["detail"]
        login = {"email": "ada@example.com", "password": PASSWORD}
        assert await pos.call("POST", "/customers/login", json=login, expect=401) == WRONG


async def profile(pos: ProductClient, registered: dict[str, Any]) -> Any:
    return (await pos.call("GET", "/customers/me", headers=signed_in(registered)))["customer"]


async def test_addresses_are_kept_with_exactly_one_default(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        home = {"line1": " 1 Main St ", "city": "Springfield"}
        work = {"label": "work", "line1": "2 Office Rd", "city": "Shelbyville", "default": True}
        gym = {"label": "gym", "line1": "3 Iron Way", "city": "Springfield", "default": True}
        # Two marked: the first of them is the default.
        shown = await profile(pos, await customer(pos, addresses=[home, work, gym]))
        ids = [address["id"] for address in shown["addresses"]]
        assert all(ADDRESS_ID.fullmatch(each) for each in ids)
        assert len(set(ids)) == 3
        assert shown["addresses"] == [
            {
                "id": ids[0],
                "label": "home",
                "line1": "1 Main St",
                "city": "Springfield",
                "default": False,
            },
            {**work, "id": ids[1]},
            {**gym, "id": ids[2], "default": False},
        ]
        # None marked: the first is.
        unmarked = [{**gym, "default": False}, {**work, "default": False}]
        plain = await profile(pos, await customer(pos, "bob@example.com", addresses=unmarked))
        assert [address["default"] for address in plain["addresses"]] == [True, False]
        bare = await profile(pos, await customer(pos, "cy@example.com"))
        assert bare["addresses"] == []


async def test_login_answers_like_register(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        registered = await customer(pos, "ada@example.com", full_name="Ada")
        body = {"email": " ADA@Example.COM ", "password": PASSWORD}
        signed = await pos.call("POST", "/customers/login", json=body)
        assert signed == {
            "customer": registered["customer"],
            "token": signed["token"],
            "token_expires_at": expiry(signed["token"]),
            "realtime_token": signed["realtime_token"],
            "realtime_token_expires_at": expiry(signed["realtime_token"]),
        }
        assert claims(signed["token"])["aud"] == "tollway:pos"
        assert (await profile(pos, signed))["id"] == registered["customer"]["id"]


async def test_every_failed_login_gets_the_same_answer(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        await customer(pos, "ada@example.com")
        await customer(pos, "grace@example.com", by=pos.other)
        for body in (
            {"email": "ada@example.com", "password": "wrong password"},
            {"email": "nobody@example.com", "password": PASSWORD},
            {"email": "not an address", "password": PASSWORD},
            {"email": "grace@example.com", "password": PASSWORD},  # another store's
        ):
            assert await pos.call("POST", "/customers/login", json=body, expect=401) == WRONG
        error = await pos.call("POST", "/customers/login", json={"email": "a"}, expect=400)
        assert "password" in error["detail"]


async def test_the_signed_in_customers_profile(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        registered = await customer(pos, full_name="Ada Lovelace", phone="+44 20 7946 0000 ")
        shown = await profile(pos, registered)
        assert shown == {
            "id": registered["customer"]["id"],
            "email": "ada@example.com",
            "full_name": "Ada Lovelace",
            "phone": "+44 20 7946 0000",
            "loyalty_points": 0,
            "loyalty_tier": "bronze",
            "addresses": [],
            "created_at": shown["created_at"],
        }
        assert datetime.fromisoformat(shown["created_at"]).tzinfo is not None


async def test_me_needs_this_stores_customer_token(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        ours = await customer(pos)
        theirs = await customer(pos, by=pos.other)
        missing = {"detail": "Missing X-Customer-Token: this endpoint acts for a customer"}
        for path in ("/customers/me", "/customers/me/orders"):
            assert await pos.call("GET", path, expect=401) == missing
            for token in (theirs["token"], ours["realtime_token"], "not.a.token"):
                headers = {CUSTOMER_HEADER: token}
                assert await pos.call("GET", path, headers=headers, expect=401) == INVALID_TOKEN
        tokens = await pos.gateway.customer_tokens()
        expired = tokens.issue(
            account_id=pos.owner.account_id,
            product="pos",
            customer_id=ours["customer"]["id"],
            ttl=-60,
        )
        error = await pos.call(
            "GET", "/customers/me", headers={CUSTOMER_HEADER: expired}, expect=401
        )
        assert error == {"detail": "X-Customer-Token has expired; sign in again"}
        # The other store's token works with its own key.
        mine = await pos.call("GET", "/customers/me", headers=signed_in(theirs), by=pos.other)
        assert mine["customer"]["id"] == theirs["customer"]["id"]


async def test_a_customers_own_orders_newest_first(product_client: ProductClientFactory) -> None:
    async with pos_client(product_client) as pos:
        items = [{"product_id": (await product(pos))["id"], "qty": 1}]
        ada, bob = await customer(pos), await customer(pos, "bob@example.com")
        first = await order(pos, items, headers=signed_in(ada))
        await order(pos, items, headers=signed_in(bob))
        await order(pos, items)  # a till's order, nobody's
        second = await order(pos, items, customer_id=ada["customer"]["id"])
        third = await order(pos, items, headers=signed_in(ada))
        path = f"/orders/{second['id']}"
        second = (await pos.call("PATCH", path, json={"status": "confirmed"}))["order"]

        async def history(**params: Any) -> list[str]:
            found = await pos.call(
                "GET", "/customers/me/orders", headers=signed_in(ada), params=params
            )
            return [each["id"] for each in found["orders"]]

        answer = await pos.call("GET", "/customers/me/orders", headers=signed_in(ada))
        assert answer == {"orders": [third, second, first]}
        assert await history(limit=2) == [third["id"], second["id"]]
        assert await history(status="pending") == [third["id"], first["id"]]
        assert await history(status="confirmed") == [second["id"]]
        assert await history(status="delivered") == []
        for params in ({"limit": 0}, {"limit": 201}, {"status": "lost"}):
            await pos.call(
                "GET", "/customers/me/orders", headers=signed_in(ada), params=params, expect=400
            )
        nobody = await customer(pos, "cy@example.com")
        found = await pos.call("GET", "/customers/me/orders", headers=signed_in(nobody))
        assert found == {"orders": []}


async def test_registering_with_an_idempotency_key_registers_once(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        body = {"email": "ada@example.com", "password": PASSWORD}
        headers = {**pos.owner.headers, "Idempotency-Key": "signup-1"}
        first = await pos.client.post("/v1/pos/customers/register", json=body, headers=headers)
        again = await pos.client.post("/v1/pos/customers/register", json=body, headers=headers)
        assert (first.status_code, again.status_code) == (201, 201)
        assert again.json() == first.json()
        assert again.headers["Idempotent-Replayed"] == "true"
