"""``GET /v1/account/subscriptions`` and what the operator's subscription moves do:
each product's live subscription with its price, a paid plan charged to the default
card, a downgrade waiting for the period's end, and the keys admitted by them, in the
process making the change at once and in another within ``key_cache_ttl``."""

from __future__ import annotations

from datetime import datetime

import pytest
from account_client import (
    DECLINING_CARD,
    GOOD_CARD,
    NOT_ADMITTED,
    AccountClient,
    account_client,
)

from tollway import Gateway
from tollway.billing import CardDetails, CardError, period_end
from tollway.testing import ProductClientFactory

MASTERCARD = CardDetails("5555555555554444", 1, 2031, "321")
SUBSCRIPTION_FIELDS = {
    "id",
    "product",
    "plan_name",
    "status",
    "price",
    "price_cents",
    "currency",
    "interval",
    "current_period_start",
    "current_period_end",
    "cancel_at_period_end",
    "scheduled_plan",
    "created_at",
}
PRICES = {
    "chat": {"plans": {"pro": {"price_cents": 2999}}},
    "code": {"plans": {"pro": {"price_cents": 120_000, "interval": "year"}}},
}


async def paid_invoices(account: AccountClient) -> list[tuple[str, int]]:
    return [(item["product"], item["amount_cents"]) for item in await account.invoices()]


async def test_each_products_live_subscription_with_its_price(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client, products=PRICES) as account:
        await account.save_card()
        chat = await account.subscribe("chat", "pro")
        await account.subscribe("code", "pro")
        listed = (await account.call("GET", "/subscriptions"))["subscriptions"]
        assert [item["product"] for item in listed] == ["account", "chat", "code"]
        assert all(set(item) == SUBSCRIPTION_FIELDS for item in listed)
        _, pro, yearly = listed
        assert pro["id"] == chat.id
        assert {name: pro[name] for name in ("plan_name", "status", "price", "price_cents")} == {
            "plan_name": "pro",
            "status": "active",
            "price": 29.99,
            "price_cents": 2999,
        }
        assert (pro["currency"], pro["interval"], pro["cancel_at_period_end"]) == (
            "usd",
            "month",
            False,
        )
        start = datetime.fromisoformat(pro["current_period_start"])
        assert datetime.fromisoformat(pro["current_period_end"]) == period_end(start, "month", 0)
        assert (yearly["price"], yearly["price_cents"], yearly["interval"]) == (
            1200,
            120_000,
            "year",
        )
        start = datetime.fromisoformat(yearly["current_period_start"])
        assert datetime.fromisoformat(yearly["current_period_end"]) == period_end(start, "year", 0)
        assert await paid_invoices(account) == [("code", 120_000), ("chat", 2999)]
        others = (await account.call("GET", "/subscriptions", by=account.other))["subscriptions"]
        assert [(item["product"], item["price"]) for item in others] == [("account", 0)]
        await account.unsubscribe("chat")
        assert await account.subscription("chat") is None  # canceled: no longer listed


async def test_prices_in_the_deployments_currency(product_client: ProductClientFactory) -> None:
    yen = {"chat": {"plans": {"pro": {"price_cents": 1500}}}}
    async with account_client(product_client, billing_currency="jpy", products=yen) as account:
        await account.save_card()
        await account.subscribe("chat", "pro")
        chat = await account.subscription("chat")
        assert (chat["price"], chat["price_cents"], chat["currency"]) == (1500, 1500, "jpy")


async def test_a_paid_plan_is_charged_to_the_default_card(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        with pytest.raises(CardError, match="No card is saved") as refused:
            await account.subscribe("chat", "pro")
        assert refused.value.status_code == 422
        await account.save_card(GOOD_CARD)
        declining = await account.save_card(DECLINING_CARD)  # now the default
        with pytest.raises(CardError, match="declined") as refused:
            await account.subscribe("chat", "pro")
        assert refused.value.status_code == 422
        assert await account.subscription("chat") is None
        assert await paid_invoices(account) == []
        await account.save_card(MASTERCARD)
        await account.subscribe("chat", "pro")
        assert (await account.subscription("chat"))["status"] == "active"
        assert await paid_invoices(account) == [("chat", 2900)]
        await account.call(
            "PATCH", f"/payment-methods/pm_{declining.id}", json={"is_default": True}
        )
        with pytest.raises(CardError, match="declined"):
            await account.subscribe("chat", "business")  # an upgrade: the rest of the period
        assert (await account.subscription("chat"))["plan_name"] == "pro"
        assert await paid_invoices(account) == [("chat", 2900)]


async def test_a_downgrade_waits_for_the_periods_end(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        await account.save_card()
        await account.subscribe("chat", "business")
        await account.subscribe("chat", "pro")
        chat = await account.subscription("chat")
        assert (chat["plan_name"], chat["price_cents"], chat["scheduled_plan"]) == (
            "business",
            9900,
            "pro",
        )
        await account.run(datetime.fromisoformat(chat["current_period_end"]))
        renewed = await account.subscription("chat")
        assert (renewed["plan_name"], renewed["price_cents"], renewed["scheduled_plan"]) == (
            "pro",
            2900,
            None,
        )
        assert renewed["current_period_start"] == chat["current_period_end"]
        assert await paid_invoices(account) == [("chat", 2900), ("chat", 9900)]
        await account.gateway.accounts.unsubscribe(
            account.owner.account_id, "chat", at_period_end=True
        )
        assert (await account.subscription("chat"))["cancel_at_period_end"] is True


async def test_the_keys_follow_the_subscription_at_once(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        chat_key = await account.chat_key()
        refused = await account.list_conversations(chat_key)
        assert (refused.status_code, refused.json()["detail"]) == (403, NOT_ADMITTED)
        await account.subscribe("chat", "free")
        assert (await account.list_conversations(chat_key)).status_code == 200
        await account.unsubscribe("chat")
        refused = await account.list_conversations(chat_key)  # the clock did not move
        assert (refused.status_code, refused.json()["detail"]) == (403, NOT_ADMITTED)
        other_key = await account.chat_key(by=account.other)
        assert (await account.list_conversations(other_key)).status_code == 403


async def test_another_process_sees_a_change_within_the_key_cache_ttl(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client, key_cache_ttl=30) as account:
        chat_key = await account.chat_key()
        await account.subscribe("chat", "free")
        assert (await account.list_conversations(chat_key)).status_code == 200
        elsewhere = Gateway(account.gateway.settings)  # the operator's command, say
        try:
            await elsewhere.accounts.unsubscribe(account.owner.account_id, "chat")
            assert (await account.list_conversations(chat_key)).status_code == 200  # cached
            account.ttl_passes()
            refused = await account.list_conversations(chat_key)
            assert (refused.status_code, refused.json()["detail"]) == (403, NOT_ADMITTED)
            await elsewhere.accounts.subscribe(account.owner.account_id, "chat", "free")
            assert (await account.list_conversations(chat_key)).status_code == 403  # cached
            account.ttl_passes()
            assert (await account.list_conversations(chat_key)).status_code == 200
        finally:
            await elsewhere.database.dispose()
