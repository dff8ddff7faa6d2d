"""A renewal the default card cannot pay, through the billing run (the operator's
``tollway billing run --as-of`` and the engine's ``run_due``): the invoice ``failed``
and the subscription ``past_due`` with the product still served; after the last retry
(``billing_retry_days``, days 1, 3 and 5) ``unpaid`` and the product refused, until a
new default card pays at once, or the period ends and the subscription with it.

The billing run is another process (or the job queue's): what the keys may use
changes for the serving process within ``key_cache_ttl``, which the tests let pass.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import msgspec
from account_client import (
    DECLINING_CARD,
    GOOD_CARD,
    NOT_ADMITTED,
    AccountClient,
    account_client,
    tollway,
)

from tollway.billing import RunReport
from tollway.testing import ProductClientFactory, Tenant

LAST_RETRY = timedelta(days=1 + 3 + 5)


async def paying_with_a_declining_card(account: AccountClient) -> tuple[Tenant, datetime]:
    """The owner on chat pro, paid with a good card, then a card declining every charge
    made the default and the good one removed; a key using chat, and when the first
    period ends."""
    good = await account.save_card(GOOD_CARD)
    await account.subscribe("chat", "pro")
    await account.save_card(DECLINING_CARD)
    await account.call("DELETE", f"/payment-methods/pm_{good.id}", expect=204)
    chat_key = await account.chat_key()
    assert (await account.list_conversations(chat_key)).status_code == 200
    chat = await account.subscription("chat")
    return chat_key, datetime.fromisoformat(chat["current_period_end"])


async def newest_invoice(account: AccountClient) -> Any:
    return (await account.invoices())[0]


async def admitted(account: AccountClient, key: Tenant) -> bool:
    """Whether the chat request is served, once the key cache's TTL has passed since
    the billing run."""
    account.ttl_passes()
    answer = await account.list_conversations(key)
    assert answer.status_code in (200, 403), answer.text
    if answer.status_code == 403:
        assert answer.json()["detail"] == NOT_ADMITTED
    return answer.status_code == 200


async def test_unpaid_after_the_last_retry_until_a_new_default_card_pays(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        chat_key, renewal = await paying_with_a_declining_card(account)
        command = await tollway(account.gateway, "billing", "run", "--as-of", renewal.isoformat())
        assert command.status == 0, command.stderr
        assert json.loads(command.stdout) == msgspec.to_builtins(RunReport(failed=1))
        failed = await newest_invoice(account)
        assert (failed["status"], failed["attempts"], failed["paid_at"]) == ("failed", 1, None)
        assert datetime.fromisoformat(failed["failed_at"]) == renewal
        assert failed["failure_message"] == "Your card was declined."
        assert failed["period_start"] == renewal.date().isoformat()
        assert (await account.subscription("chat"))["status"] == "past_due"
        assert await admitted(account, chat_key)
        assert "chat" in (await account.call("GET", "/me"))["products"]

        report = await account.run(renewal + LAST_RETRY - timedelta(seconds=1))
        assert (report.failed, report.unpaid) == (2, 0)  # days 1 and 4
        assert (await account.subscription("chat"))["status"] == "past_due"
        report = await account.run(renewal + LAST_RETRY)
        assert (report.failed, report.unpaid, report.canceled) == (1, 1, 0)  # day 9
        failed = await newest_invoice(account)
        assert (failed["status"], failed["attempts"]) == ("failed", 4)
        assert datetime.fromisoformat(failed["failed_at"]) == renewal + LAST_RETRY
        assert (await account.subscription("chat"))["status"] == "unpaid"
        assert not await admitted(account, chat_key)
        me = await account.call("GET", "/me")
        assert (me["products"], me["plan"]) == (["account"], "standard")
        [declining] = (await account.call("GET", "/payment-methods"))["payment_methods"]
        await account.call("DELETE", f"/payment-methods/{declining['id']}", expect=409)

        good = await account.save_card(GOOD_CARD, default=False)
        assert (await newest_invoice(account))["status"] == "failed"  # not the default yet
        await account.call("PATCH", f"/payment-methods/pm_{good.id}", json={"is_default": True})
        paid = await newest_invoice(account)
        assert (paid["number"], paid["status"], paid["attempts"]) == (failed["number"], "paid", 5)
        assert paid["paid_at"] is not None
        chat = await account.subscription("chat")
        assert chat["status"] == "active"
        assert datetime.fromisoformat(chat["current_period_start"]) == renewal
        served = await account.list_conversations(chat_key)  # at once: no TTL to wait for
        assert served.status_code == 200, served.text
        assert await account.run(renewal + LAST_RETRY) == RunReport()  # nothing more due


async def test_unpaid_until_the_period_ends_is_over(product_client: ProductClientFactory) -> None:
    async with account_client(product_client) as account:
        chat_key, renewal = await paying_with_a_declining_card(account)
        await account.run(renewal + LAST_RETRY)
        unpaid = await account.subscription("chat")
        assert unpaid["status"] == "unpaid"
        period_end = datetime.fromisoformat(unpaid["current_period_end"])
        assert (await account.run(period_end - timedelta(seconds=1))).canceled == 0
        report = await account.run(period_end)
        assert (report.canceled, report.failed) == (1, 0)
        assert await account.subscription("chat") is None
        given_up, first = await account.invoices()
        assert (given_up["status"], given_up["paid_at"]) == ("uncollectible", None)
        assert datetime.fromisoformat(given_up["uncollectible_at"]) == period_end
        assert first["status"] == "paid"
        assert not await admitted(account, chat_key)
        later = await account.run(period_end + timedelta(days=90))
        assert (later.failed, later.canceled) == (0, 0)
        assert len(await account.invoices()) == 2


async def test_canceling_a_past_due_subscription_voids_its_invoice(
    product_client: ProductClientFactory,
) -> None:
    async with account_client(product_client) as account:
        chat_key, renewal = await paying_with_a_declining_card(account)
        await account.run(renewal)
        assert (await account.subscription("chat"))["status"] == "past_due"
        await account.unsubscribe("chat")
        void = await newest_invoice(account)
        assert (void["status"], void["paid_at"]) == ("void", None)
        assert void["voided_at"] is not None
        assert (await account.list_conversations(chat_key)).status_code == 403  # at once
        assert (await account.run(renewal + LAST_RETRY)).failed == 0
