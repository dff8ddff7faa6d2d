"""``/v1/account/payment-methods``: the account's saved cards, exactly one of them the
default, which a ``PATCH`` moves; removing one, but the last card of an account paying
for a subscription; and no full card number anywhere in the database."""

from __future__ import annotations

from typing import Any

from account_client import GOOD_CARD, AccountClient, account_client

from tollway.billing import CardDetails
from tollway.testing import ProductClientFactory, Tenant, database_dump
from tollway_account.product import BILLING_READ

MASTERCARD = CardDetails("5555555555554444", 1, 2031, "321")
AMEX = CardDetails("378282246310005", 6, 2032, "4321")
CARD_FIELDS = {"id", "type", "brand", "last4", "exp_month", "exp_year", "is_default", "created_at"}


async def cards(account: AccountClient, *, by: Tenant | None = None) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = (await account.call("GET", "/payment-methods", by=by))[
        "payment_methods"
    ]
    return listed


async def defaults(account: AccountClient, *, by: Tenant | None = None) -> list[str]:
    return [card["id"] for card in await cards(account, by=by) if card["is_default"]]


async def test_the_saved_cards(product_client: ProductClientFactory) -> None:
    async with account_client(product_client) as account:
        assert await cards(account) == []
        visa = await account.save_card(default=False)  # the first card: the default anyway
        master = await account.save_card(MASTERCARD, default=False)
        listed = await cards(account)
        assert all(set(card) == CARD_FIELDS for card in listed)
        assert [{name: card[name] for name in CARD_FIELDS - {"created_at"}} for card in listed] == [
            {
                "id": f"pm_{visa.id}",
                "type": "card",
                "brand": "visa",
                "last4": "4242",
                "exp_month": 12,
                "exp_year": 2030,
                "is_default": True,
            },
            {
                "id": f"pm_{master.id}",
                "type": "card",
                "brand": "mastercard",
                "last4": "4444",
                "exp_month": 1,
                "exp_year": 2031,
                "is_default": False,
            },
        ]
        assert await cards(account, by=account.other) == []
        reader = await account.key(BILLING_READ)
        assert len(await cards(account, by=reader)) == 2


async def test_exactly_one_default_which_a_patch_moves(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        visa = await account.save_card()
        master = await account.save_card(MASTERCARD, default=False)
        theirs = await account.save_card(by=account.other)
        made = await account.call(
            "PATCH", f"/payment-methods/pm_{master.id}", json={"is_default": True}
        )
        assert (made["id"], made["is_default"], made["last4"]) == (f"pm_{master.id}", True, "4444")
        assert await defaults(account) == [f"pm_{master.id}"]
        again = await account.call(
            "PATCH", f"/payment-methods/pm_{master.id}", json={"is_default": True}
        )
        assert again["is_default"] is True
        assert await defaults(account) == [f"pm_{master.id}"]
        refused = await account.call(
            "PATCH", f"/payment-methods/pm_{master.id}", json={"is_default": False}, expect=422
        )
        assert "another" in refused["detail"]
        for wrong in [{}, {"is_default": "yes"}, {"is_default": True, "brand": "amex"}]:
            await account.call("PATCH", f"/payment-methods/pm_{visa.id}", json=wrong, expect=400)
        for unknown in [f"pm_{theirs.id}", "pm_999999", "pm_0", "pm_x", f"{visa.id}", "card_1"]:
            missing = await account.call(
                "PATCH", f"/payment-methods/{unknown}", json={"is_default": True}, expect=404
            )
            assert missing["detail"] == f"Payment method {unknown} not found"
        assert await defaults(account) == [f"pm_{master.id}"]
        assert await defaults(account, by=account.other) == [f"pm_{theirs.id}"]
        await account.call(
            "PATCH",
            f"/payment-methods/pm_{visa.id}",
            json={"is_default": True},
            by=account.other,
            expect=404,
        )
        reader = await account.key(BILLING_READ)
        await account.call(
            "PATCH",
            f"/payment-methods/pm_{visa.id}",
            json={"is_default": True},
            by=reader,
            expect=403,
        )
        assert await defaults(account) == [f"pm_{master.id}"]


async def test_removing_cards(product_client: ProductClientFactory) -> None:
    async with account_client(product_client) as account:
        visa = await account.save_card()
        master = await account.save_card(MASTERCARD, default=False)
        amex = await account.save_card(AMEX, default=False)
        theirs = await account.save_card(by=account.other)
        await account.call("DELETE", f"/payment-methods/pm_{visa.id}", expect=204)
        assert await defaults(account) == [f"pm_{amex.id}"]  # the newest left
        await account.call("DELETE", f"/payment-methods/pm_{visa.id}", expect=404)
        await account.call("DELETE", f"/payment-methods/pm_{theirs.id}", expect=404)
        reader = await account.key(BILLING_READ)
        await account.call("DELETE", f"/payment-methods/pm_{master.id}", by=reader, expect=403)
        await account.call("DELETE", f"/payment-methods/pm_{master.id}", expect=204)
        assert [card["id"] for card in await cards(account)] == [f"pm_{amex.id}"]
        await account.subscribe("chat", "pro")
        refused = await account.call("DELETE", f"/payment-methods/pm_{amex.id}", expect=409)
        assert "last card" in refused["detail"]
        assert await defaults(account) == [f"pm_{amex.id}"]
        await account.unsubscribe("chat")
        await account.subscribe("chat", "free")  # costs nothing: needs no card
        await account.call("DELETE", f"/payment-methods/pm_{amex.id}", expect=204)
        assert await cards(account) == []
        assert len(await cards(account, by=account.other)) == 1


async def test_no_full_card_number_is_stored(product_client: ProductClientFactory) -> None:
    async with account_client(product_client) as account:
        visa = await account.save_card()
        await account.save_card(MASTERCARD)
        await account.subscribe("chat", "pro")
        await account.call("DELETE", f"/payment-methods/pm_{visa.id}", expect=204)
        dump = await database_dump(account.gateway)
        assert "chat pro (monthly)" in dump  # the dump holds what was written
        for number in (GOOD_CARD.number, MASTERCARD.number):
            assert number not in dump
