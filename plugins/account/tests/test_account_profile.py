"""``GET`` and ``PATCH /v1/account/me``: each key sees its own account's profile, with
the products its keys are admitted to; a change touches only the fields given, by
the profile's rules, and moves ``updated_at`` only when a value changes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from account_client import account_client

from tollway.testing import ProductClientFactory
from tollway_account.product import BILLING_READ, PROFILE_READ, PROFILE_WRITE

PROFILE_FIELDS = {
    "id",
    "email",
    "full_name",
    "company",
    "tax_id",
    "products",
    "plan",
    "created_at",
    "updated_at",
}
UPDATED_FIELDS = {"id", "email", "full_name", "company", "tax_id", "updated_at"}
ACME = {"full_name": "Jane Roe", "company": "Acme Widgets GmbH", "tax_id": "DE 811/907-980"}


def stored(profile: dict[str, Any]) -> dict[str, Any]:
    return {name: profile[name] for name in ("full_name", "company", "tax_id")}


async def test_each_key_sees_its_own_accounts_profile(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        await account.call("PATCH", "/me", json=ACME)
        mine = await account.call("GET", "/me")
        theirs = await account.call("GET", "/me", by=account.other)
        assert set(mine) == PROFILE_FIELDS
        assert (mine["id"], stored(mine)) == (account.owner.account_id, ACME)
        assert (mine["email"], mine["products"], mine["plan"]) == (None, ["account"], "standard")
        assert datetime.fromisoformat(mine["created_at"]) < datetime.fromisoformat(
            mine["updated_at"]
        )
        assert theirs["id"] == account.other.account_id
        assert stored(theirs) == {"full_name": "", "company": "", "tax_id": None}


async def test_products_and_plan_follow_the_subscriptions(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        await account.subscribe("chat", "free")
        me = await account.call("GET", "/me")
        assert me["products"] == ["account", "chat"]
        await account.subscribe("code", "enterprise")  # rank 3
        await account.save_card()
        await account.subscribe("chat", "business")  # rank 2
        me = await account.call("GET", "/me")
        assert (me["products"], me["plan"]) == (["account", "chat", "code"], "enterprise")
        await account.unsubscribe("code")
        me = await account.call("GET", "/me")
        assert (me["products"], me["plan"]) == (["account", "chat"], "business")
        other = await account.call("GET", "/me", by=account.other)
        assert (other["products"], other["plan"]) == (["account"], "standard")


async def test_a_change_touches_only_the_fields_given(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        await account.call("PATCH", "/me", json=ACME)
        changed = await account.call("PATCH", "/me", json={"company": "  Acme AG  "})
        assert set(changed) == UPDATED_FIELDS
        assert stored(changed) == {**ACME, "company": "Acme AG"}  # trimmed
        cleared = await account.call("PATCH", "/me", json={"tax_id": None, "company": ""})
        assert stored(cleared) == {"full_name": "Jane Roe", "company": "", "tax_id": None}
        me = await account.call("GET", "/me")
        assert (stored(me), me["updated_at"]) == (stored(cleared), cleared["updated_at"])
        assert stored(await account.call("GET", "/me", by=account.other))["full_name"] == ""


async def test_updated_at_moves_only_when_a_value_changes(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        first = await account.call("PATCH", "/me", json=ACME)
        for same in ({}, ACME, {"full_name": " Jane Roe "}, {"company": ACME["company"]}):
            again = await account.call("PATCH", "/me", json=same)
            assert again["updated_at"] == first["updated_at"], same
        moved = await account.call("PATCH", "/me", json={"full_name": "Jane Q. Roe"})
        assert datetime.fromisoformat(moved["updated_at"]) > datetime.fromisoformat(
            first["updated_at"]
        )
        assert (await account.call("GET", "/me"))["updated_at"] == moved["updated_at"]


async def test_a_value_breaking_its_rule_is_422_and_changes_nothing(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        before = await account.call("PATCH", "/me", json=ACME)
        longest = {"full_name": "x" * 200, "company": "y" * 200, "tax_id": "Z" * 32}
        for broken, says in [
            ({"full_name": "x" * 201}, "full_name can be at most 200 characters"),
            ({"company": "y" * 201}, "company can be at most 200 characters"),
            ({"full_name": "Jane\nRoe"}, "full_name must not contain control characters"),
            ({"company": "Acme\x00"}, "company must not contain control characters"),
            ({"company": "Acme\x7f Inc"}, "company must not contain control characters"),
            ({"tax_id": "Z" * 33}, "tax_id must be letters and digits"),
            ({"tax_id": "DE#811"}, "tax_id must be letters and digits"),
            ({"tax_id": "-DE811"}, "tax_id must be letters and digits"),
            ({"full_name": "Ok", "tax_id": "DE 811!"}, "tax_id must be letters and digits"),
        ]:
            refused = await account.call("PATCH", "/me", json=broken, expect=422)
            assert says in refused["detail"], (broken, refused)
        me = await account.call("GET", "/me")
        assert (stored(me), me["updated_at"]) == (ACME, before["updated_at"])
        assert stored(await account.call("PATCH", "/me", json=longest)) == longest


async def test_a_malformed_body_is_400_and_changes_nothing(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        before = await account.call("PATCH", "/me", json=ACME)
        json_headers = {"Content-Type": "application/json"}
        for body in [b"{", b"", b"[]", b'"Jane"', b"null"]:
            await account.call("PATCH", "/me", content=body, headers=json_headers, expect=400)
        for wrong in [
            {"full_name": None},  # a name is cleared with "", never null
            {"full_name": 7},
            {"company": ["Acme"]},
            {"tax_id": 811907980},
            {"email": "jane@acme.example"},  # the account's identity: not changed here
            {"plan": "business"},
        ]:
            await account.call("PATCH", "/me", json=wrong, expect=400)
        me = await account.call("GET", "/me")
        assert (stored(me), me["updated_at"]) == (ACME, before["updated_at"])


async def test_reading_and_changing_need_their_scopes(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        reader = await account.key(PROFILE_READ)
        writer = await account.key(PROFILE_WRITE)
        neither = await account.key(BILLING_READ)
        assert (await account.call("GET", "/me", by=reader))["id"] == account.owner.account_id
        await account.call("PATCH", "/me", json=ACME, by=reader, expect=403)
        await account.call("GET", "/me", by=writer, expect=403)
        assert stored(await account.call("PATCH", "/me", json=ACME, by=writer)) == ACME
        refused = await account.call("GET", "/me", by=neither, expect=403)
        assert PROFILE_READ in refused["detail"]
        await account.call("PATCH", "/me", json={"company": "Nope"}, by=neither, expect=403)
        anonymous = await account.client.get(f"{account.product_client.product.prefix}/me")
        assert anonymous.status_code == 401
        assert stored(await account.call("GET", "/me")) == ACME
