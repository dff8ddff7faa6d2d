"""The platform billing its tenants, on both backends: every product subscription is a
subscription on the billing engine's ``platform`` ledger, the pipeline admits by it,
free periods renew without an invoice, and a tenant whose retries all failed is
``unpaid`` (refused) until a new card pays the invoice or the period ends.

Time moves with ``run_due(as_of=...)``: every step happens at its own due time.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from widget_plugin import WidgetsPlugin

from tollway import Gateway
from tollway.billing import PLATFORM, TENANT, CardDetails, CardError, Subscription, refunds
from tollway.billing.card_records import ProcessorCard
from tollway.billing.models import BillingInvoice
from tollway.cli.serving import bootstrap_demo
from tollway.testing import GatewayFactory, gateway_client

GOOD = CardDetails("4242 4242 4242 4242", 12, 2034, "123")
FAILS_LATER = CardDetails("4000 0000 0000 0341", 12, 2034, "123")
PRICED = {"widgets": {"plans": {"big": {"price_cents": 1_500}}}}
"""``big`` costs 15.00 a month; ``tiny`` stays free."""
DAY = timedelta(days=1)


async def tenant(gateway_factory: GatewayFactory, **settings: Any) -> tuple[Gateway, int, str]:
    gateway = await gateway_factory(
        plugins=[], extra_plugins=[("widgets", WidgetsPlugin())], products=PRICED, **settings
    )
    account = await gateway.accounts.create_account("acme", {"widgets": "tiny"})
    key = (await gateway.accounts.create_key(account, scopes=["widgets:read"])).key
    return gateway, account, key


async def save(gateway: Gateway, account: int, card: CardDetails) -> int:
    async with gateway.database.transaction() as session:
        wallet = gateway.billing.wallet(session, PLATFORM, account)
        return (await wallet.add(TENANT, card, default=True)).id


async def remove(gateway: Gateway, account: int, method_id: int) -> None:
    async with gateway.database.transaction() as session:
        await gateway.billing.wallet(session, PLATFORM, account).remove(TENANT, method_id)


async def widgets(gateway: Gateway, account: int) -> Subscription:
    async with gateway.database.transaction() as session:
        found = await gateway.billing.book(session, PLATFORM, account).subscription(
            TENANT, "widgets"
        )
    assert found is not None
    return found


async def invoices(gateway: Gateway) -> list[BillingInvoice]:
    async with gateway.database.sessions() as session:
        query = select(BillingInvoice).order_by(BillingInvoice.id)
        return list((await session.scalars(query)).all())


async def status_of(gateway: Gateway, key: str) -> int:
    async with gateway_client(gateway) as client:
        response = await client.get(
            "/v1/widgets/widgets", headers={"Authorization": f"Bearer {key}"}
        )
    return response.status_code


async def test_a_free_plan_renews_without_an_invoice(gateway_factory: GatewayFactory) -> None:
    gateway, account, key = await tenant(gateway_factory)
    started = await widgets(gateway, account)
    await gateway.billing.run_due(started.current_period_end + DAY * 40)
    renewed = await widgets(gateway, account)
    assert (started.amount_cents, started.status) == (0, "active")
    assert renewed.current_period_start > started.current_period_end  # two periods on
    assert renewed.current_period_end > started.current_period_end + DAY * 40
    assert await invoices(gateway) == []
    assert await status_of(gateway, key) == 200


async def test_a_paid_plan_needs_a_card_and_charges_it(gateway_factory: GatewayFactory) -> None:
    gateway, account, key = await tenant(gateway_factory)
    with pytest.raises(CardError, match="No card is saved"):
        await gateway.accounts.subscribe(account, "widgets", "big")
    assert (await widgets(gateway, account)).plan == "tiny"  # nothing changed
    await save(gateway, account, GOOD)
    upgraded = await gateway.accounts.subscribe(account, "widgets", "big")
    [invoice] = await invoices(gateway)
    assert (upgraded.plan, upgraded.amount_cents) == ("big", 1_500)
    assert (invoice.kind, invoice.status) == ("proration", "paid")
    assert 0 < invoice.amount_cents <= 1_500  # the rest of the period, prorated
    assert await status_of(gateway, key) == 200


async def test_a_tenant_whose_retries_failed_is_refused_until_a_new_card_pays(
    gateway_factory: GatewayFactory,
) -> None:
    gateway, account, key = await tenant(gateway_factory)
    good = await save(gateway, account, GOOD)
    await gateway.accounts.unsubscribe(account, "widgets")
    await gateway.accounts.subscribe(account, "widgets", "big")  # first period charged
    await save(gateway, account, FAILS_LATER)
    await remove(gateway, account, good)
    period_end = (await widgets(gateway, account)).current_period_end

    await gateway.billing.run_due(period_end)
    assert (await widgets(gateway, account)).status == "past_due"
    assert await status_of(gateway, key) == 200  # service goes on while retries last
    report = await gateway.billing.run_due(period_end + DAY * 9)  # days 1, 3, 5 after
    unpaid = await widgets(gateway, account)
    assert (unpaid.status, report.unpaid) == ("unpaid", 1)
    assert await status_of(gateway, key) == 403
    renewal = (await invoices(gateway))[-1]
    assert (renewal.status, renewal.attempts) == ("open", 4)
    assert renewal.next_attempt_at is None  # no more tries of the engine's own

    await save(gateway, account, GOOD)
    collected = await gateway.billing.collect(PLATFORM, account, TENANT)
    paid = (await invoices(gateway))[-1]
    assert (collected.renewed, paid.status, paid.attempts) == (1, "paid", 5)
    assert (await widgets(gateway, account)).status == "active"
    assert await status_of(gateway, key) == 200


async def test_an_unpaid_subscription_ends_with_its_period(
    gateway_factory: GatewayFactory,
) -> None:
    gateway, account, key = await tenant(gateway_factory, billing_retry_days=[1])
    good = await save(gateway, account, GOOD)
    await gateway.accounts.subscribe(account, "widgets", "big")
    await save(gateway, account, FAILS_LATER)
    await remove(gateway, account, good)
    first_end = (await widgets(gateway, account)).current_period_end
    await gateway.billing.run_due(first_end + DAY)
    unpaid = await widgets(gateway, account)
    assert unpaid.status == "unpaid"

    report = await gateway.billing.run_due(unpaid.current_period_end)
    listed = await gateway.accounts.account(account)
    renewal = (await invoices(gateway))[-1]
    assert report.canceled == 1
    assert [(s.status, s.admitted) for s in listed.subscriptions] == [("canceled", False)]
    assert (renewal.status, renewal.uncollectible_at) == (
        "uncollectible",
        unpaid.current_period_end,
    )
    assert await status_of(gateway, key) == 403


async def test_canceling_at_the_period_end_keeps_the_product_until_then(
    gateway_factory: GatewayFactory,
) -> None:
    gateway, account, key = await tenant(gateway_factory)
    kept = await gateway.accounts.unsubscribe(account, "widgets", at_period_end=True)
    assert kept.cancel_at_period_end
    assert await status_of(gateway, key) == 200
    await gateway.billing.run_due(kept.current_period_end - DAY)
    assert await status_of(gateway, key) == 200
    await gateway.billing.run_due(kept.current_period_end)
    listed = await gateway.accounts.account(account)
    assert [(s.status, s.admitted) for s in listed.subscriptions] == [("canceled", False)]
    assert await status_of(gateway, key) == 403
    assert datetime.now(UTC) < kept.current_period_end


async def test_a_card_saved_for_a_transaction_that_rolls_back_is_forgotten(
    gateway_factory: GatewayFactory,
) -> None:
    gateway, account, _ = await tenant(gateway_factory)

    async def save_then_fail() -> None:
        async with gateway.database.transaction() as session:
            wallet = gateway.billing.wallet(session, PLATFORM, account)
            await wallet.add(TENANT, GOOD, default=True)
            raise RuntimeError("something failed after the card was saved")

    with pytest.raises(RuntimeError, match="after the card"):
        await save_then_fail()
    await asyncio.gather(*refunds._pending)  # the processor is told in the background
    async with gateway.database.sessions() as session:
        cards = list(await session.scalars(select(ProcessorCard)))
    assert [card.forgotten_at is not None for card in cards] == [True]


async def test_the_demo_account_gets_the_richest_free_plans(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory(
        plugins=[], extra_plugins=[("widgets", WidgetsPlugin())], products=PRICED
    )
    key = await bootstrap_demo(gateway)  # an account without a card: big is not free
    [demo] = await gateway.accounts.list_accounts()
    assert key is not None
    assert demo.active_plans == {"widgets": "tiny"}


async def test_the_demo_account_skips_plans_that_admit_no_key(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory(plugins=["account", "qr"])
    await bootstrap_demo(gateway)
    [demo] = await gateway.accounts.list_accounts()
    assert demo.active_plans == {"account": "standard", "qr": "pro"}
