"""The billing engine on both backends: subscribing, renewals at calendar-correct
period ends, dunning, cancellation, plan changes with proration, and money moving once
when several workers run what is due at the same time.

Time moves with ``run_due(as_of=...)``, the engine's test clock: every step happens at
its own due time, so the expected dates are exact.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from billing_plugin import LEDGER, PREFIX, ShopPlugin, SwitchableProcessor
from sqlalchemy import func, select

from tollway import Conflict, Gateway, NotFound
from tollway.billing import (
    Book,
    CardDetails,
    CardError,
    IllegalTransition,
    Subscription,
    Terms,
    Wallet,
    period_end,
)
from tollway.billing.card_records import ProcessorCard, ProcessorCharge
from tollway.billing.models import BillingInvoice, BillingSubscription
from tollway.testing import GatewayFactory, emitted, subscribe

T = TypeVar("T")

GOOD = CardDetails("4242 4242 4242 4242", 12, 2034, "123", "Ada Lovelace")
DECLINED = CardDetails("4000 0000 0000 0002", 12, 2034, "123")
NO_FUNDS = CardDetails("4000 0000 0000 9995", 12, 2034, "123")
FAILS_LATER = CardDetails("4000 0000 0000 0341", 12, 2034, "123")
MONTHLY = Terms(plan="1", plan_name="basic", interval="month", amount_cents=1_000)
JAN_31 = datetime(2027, 1, 31, 10, 0, tzinfo=UTC)
SECOND = timedelta(seconds=1)


async def shop(gateway_factory: GatewayFactory, **options: Any) -> tuple[Gateway, int]:
    gateway = await gateway_factory(plugins=[], extra_plugins=[("shop", ShopPlugin(**options))])
    account = await gateway.accounts.create_account("shop", {})
    await subscribe(gateway, account, list(gateway.registry.events))
    return gateway, account


async def in_book(gateway: Gateway, account: int, work: Callable[[Book], Awaitable[T]]) -> T:
    async with gateway.database.transaction() as session:
        return await work(gateway.billing.book(session, LEDGER, account))


async def start(
    gateway: Gateway, account: int, card: CardDetails = GOOD, terms: Terms = MONTHLY
) -> Subscription:
    return await in_book(
        gateway, account, lambda book: book.subscribe("7", terms, card=card, now=JAN_31)
    )


async def current(gateway: Gateway, account: int) -> Subscription | None:
    return await in_book(gateway, account, lambda book: book.subscription("7"))


async def invoices(gateway: Gateway) -> list[BillingInvoice]:
    async with gateway.database.sessions() as session:
        query = select(BillingInvoice).order_by(BillingInvoice.id)
        return list((await session.scalars(query)).all())


async def charges(gateway: Gateway) -> list[ProcessorCharge]:
    async with gateway.database.sessions() as session:
        query = select(ProcessorCharge).order_by(ProcessorCharge.created_at)
        return list((await session.scalars(query)).all())


async def events(gateway: Gateway) -> list[tuple[str, str]]:
    return [
        (event.removeprefix(PREFIX), data["status"]) for _, event, data in await emitted(gateway)
    ]


def test_periods_are_calendar_correct() -> None:
    assert period_end(JAN_31, "month", 0) == datetime(2027, 2, 28, 10, tzinfo=UTC)
    assert period_end(JAN_31, "month", 1) == datetime(2027, 3, 31, 10, tzinfo=UTC)
    assert period_end(JAN_31, "month", 12) == datetime(2028, 2, 29, 10, tzinfo=UTC)
    leap = datetime(2028, 2, 29, tzinfo=UTC)
    assert period_end(leap, "year", 0) == datetime(2029, 2, 28, tzinfo=UTC)
    assert period_end(leap, "year", 3) == datetime(2032, 2, 29, tzinfo=UTC)


async def test_subscribing_charges_the_first_period(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    subscription = await start(gateway, account)
    assert subscription.status == "active"
    assert subscription.current_period_start == JAN_31
    assert subscription.current_period_end == datetime(2027, 2, 28, 10, tzinfo=UTC)
    [invoice] = await invoices(gateway)
    assert (invoice.status, invoice.number, invoice.amount_cents) == ("paid", 1, 1_000)
    [charge] = await charges(gateway)
    assert (charge.status, charge.amount_cents, charge.id) == (
        "succeeded",
        1_000,
        invoice.charge_id,
    )
    assert await events(gateway) == [("subscription.created", "active"), ("invoice.paid", "active")]
    methods = await in_wallet(gateway, account, lambda wallet: wallet.cards("7"))
    assert [(m.brand, m.last4, m.is_default) for m in methods] == [("visa", "4242", True)]


@pytest.mark.parametrize(
    ("card", "message"),
    [(DECLINED, "Your card was declined."), (NO_FUNDS, "Your card has insufficient funds.")],
)
async def test_a_refused_card_writes_nothing(
    gateway_factory: GatewayFactory, card: CardDetails, message: str
) -> None:
    gateway, account = await shop(gateway_factory)
    with pytest.raises(CardError) as refused:
        await start(gateway, account, card)
    assert refused.value.message == message
    assert refused.value.status_code == 422
    assert await current(gateway, account) is None
    assert await invoices(gateway) == []
    assert await emitted(gateway) == []
    await start(gateway, account)  # the refused attempt took no invoice number
    assert [invoice.number for invoice in await invoices(gateway)] == [1]


async def test_renewals_follow_the_calendar(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    await start(gateway, account)
    report = await gateway.billing.run_due(datetime(2027, 5, 1, tzinfo=UTC))
    assert report.renewed == 3
    subscription = await current(gateway, account)
    assert subscription is not None
    assert subscription.current_period_start == datetime(2027, 4, 30, 10, tzinfo=UTC)
    assert subscription.current_period_end == datetime(2027, 5, 31, 10, tzinfo=UTC)
    paid = await invoices(gateway)
    assert [(i.kind, i.number, i.status) for i in paid] == [
        ("start", 1, "paid"),
        ("cycle", 2, "paid"),
        ("cycle", 3, "paid"),
        ("cycle", 4, "paid"),
    ]
    assert [i.paid_at for i in paid[1:]] == [
        datetime(2027, 2, 28, 10, tzinfo=UTC),
        datetime(2027, 3, 31, 10, tzinfo=UTC),
        datetime(2027, 4, 30, 10, tzinfo=UTC),
    ]
    assert len(await charges(gateway)) == 4
    renewed = [e for e in await events(gateway) if e[0] == "subscription.renewed"]
    assert renewed == [("subscription.renewed", "active")] * 3
    assert (await gateway.billing.run_due(datetime(2027, 5, 1, tzinfo=UTC))).renewed == 0


async def test_a_trial_is_free_then_charged(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    trial = Terms(plan="1", plan_name="basic", interval="month", amount_cents=1_000, trial_days=14)
    subscription = await start(gateway, account, terms=trial)
    trial_end = JAN_31 + timedelta(days=14)
    assert (subscription.status, subscription.trial_end_at) == ("trialing", trial_end)
    assert await charges(gateway) == []
    await gateway.billing.run_due(trial_end - SECOND)
    assert (await current(gateway, account)).status == "trialing"  # type: ignore[union-attr]
    await gateway.billing.run_due(trial_end)
    after = await current(gateway, account)
    assert after is not None
    assert (after.status, after.current_period_start) == ("active", trial_end)
    assert after.current_period_end == datetime(2027, 3, 14, 10, tzinfo=UTC)
    assert [e[0] for e in await events(gateway)][-2:] == ["invoice.paid", "subscription.updated"]


async def test_dunning_retries_then_cancels(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    trial = Terms(plan="1", plan_name="basic", interval="month", amount_cents=1_000, trial_days=7)
    await start(gateway, account, FAILS_LATER, trial)  # saved fine, every charge fails
    trial_end = JAN_31 + timedelta(days=7)
    await gateway.billing.run_due(trial_end)
    subscription = await current(gateway, account)
    assert subscription is not None
    assert subscription.status == "past_due"
    [invoice] = await invoices(gateway)
    assert (invoice.status, invoice.attempts) == ("open", 1)
    assert invoice.next_attempt_at == trial_end + timedelta(days=1)
    await gateway.billing.run_due(trial_end + timedelta(days=3, hours=23))  # retries 1 and ...
    [invoice] = await invoices(gateway)
    assert invoice.attempts == 2  # ... not yet the one on day 4
    report = await gateway.billing.run_due(trial_end + timedelta(days=30))
    assert (report.failed, report.canceled) == (2, 1)
    assert await current(gateway, account) is None
    [invoice] = await invoices(gateway)
    assert (invoice.status, invoice.attempts) == ("uncollectible", 4)
    assert invoice.uncollectible_at == trial_end + timedelta(days=1 + 3 + 5)
    assert [c.status for c in await charges(gateway)] == ["failed"] * 4
    assert [e for e in await events(gateway) if e[0] != "subscription.created"] == [
        ("invoice.failed", "past_due"),
        ("subscription.updated", "past_due"),
        ("invoice.failed", "past_due"),
        ("invoice.failed", "past_due"),
        ("invoice.failed", "past_due"),
        ("subscription.canceled", "canceled"),
    ]


async def test_a_retry_that_succeeds_makes_it_active_again(
    gateway_factory: GatewayFactory,
) -> None:
    gateway, account = await shop(gateway_factory, switchable=True)
    processor = gateway.payments
    assert isinstance(processor, SwitchableProcessor)
    await start(gateway, account)
    processor.refusing = True
    await gateway.billing.run_due(datetime(2027, 2, 28, 10, tzinfo=UTC))
    assert (await current(gateway, account)).status == "past_due"  # type: ignore[union-attr]
    processor.refusing = False
    report = await gateway.billing.run_due(datetime(2027, 3, 2, tzinfo=UTC))
    assert report.renewed == 1
    subscription = await current(gateway, account)
    assert subscription is not None
    assert subscription.status == "active"
    assert subscription.current_period_end == datetime(2027, 3, 31, 10, tzinfo=UTC)
    cycle = (await invoices(gateway))[-1]
    assert (cycle.status, cycle.attempts, cycle.paid_at) == (
        "paid",
        2,
        datetime(2027, 3, 1, 10, tzinfo=UTC),
    )


async def test_cancel_at_period_end_and_now(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    await start(gateway, account)
    later = await in_book(
        gateway, account, lambda book: book.cancel("7", immediately=False, now=JAN_31)
    )
    assert (later.status, later.cancel_at_period_end) == ("active", True)
    report = await gateway.billing.run_due(datetime(2027, 6, 1, tzinfo=UTC))
    assert (report.renewed, report.canceled) == (0, 1)
    assert await current(gateway, account) is None
    async with gateway.database.sessions() as session:
        ended = await session.scalar(select(BillingSubscription))
    assert ended is not None
    assert ended.canceled_at == datetime(2027, 2, 28, 10, tzinfo=UTC)
    with pytest.raises(IllegalTransition):
        await in_book(gateway, account, lambda book: book.cancel("7", immediately=True))
    await start(gateway, account)  # a canceled subscription leaves room for a new one
    now = await in_book(gateway, account, lambda book: book.cancel("7", immediately=True))
    assert now.status == "canceled"
    assert [e[0] for e in await events(gateway)][-1] == "subscription.canceled"


async def test_cancel_now_voids_an_open_invoice(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    trial = Terms(plan="1", plan_name="basic", interval="month", amount_cents=1_000, trial_days=1)
    await start(gateway, account, FAILS_LATER, trial)
    await gateway.billing.run_due(JAN_31 + timedelta(days=1))
    await in_book(gateway, account, lambda book: book.cancel("7", immediately=True))
    [invoice] = await invoices(gateway)
    assert invoice.status == "void"
    assert (await gateway.billing.run_due(JAN_31 + timedelta(days=60))).failed == 0


async def test_an_upgrade_is_prorated_by_day(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    await start(gateway, account)  # Jan 31 to Feb 28: 28 days
    pro = Terms(plan="2", plan_name="pro", interval="month", amount_cents=3_000)
    ten_days_left = datetime(2027, 2, 18, 10, tzinfo=UTC)
    changed = await in_book(gateway, account, lambda book: book.change("7", pro, now=ten_days_left))
    assert (changed.plan_name, changed.amount_cents) == ("pro", 3_000)
    proration = (await invoices(gateway))[-1]
    assert proration.kind == "proration"
    assert proration.amount_cents == round(2_000 * 10 / 28)  # 714
    assert [c.amount_cents for c in await charges(gateway)] == [1_000, 714]
    await gateway.billing.run_due(datetime(2027, 3, 1, tzinfo=UTC))
    assert (await invoices(gateway))[-1].amount_cents == 3_000


async def test_a_downgrade_waits_for_the_period_end(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    await start(gateway, account)
    cheap = Terms(plan="3", plan_name="lite", interval="month", amount_cents=500)
    changed = await in_book(gateway, account, lambda book: book.change("7", cheap, now=JAN_31))
    assert (changed.plan_name, changed.pending) == ("basic", cheap)
    await gateway.billing.run_due(datetime(2027, 3, 1, tzinfo=UTC))
    after = await current(gateway, account)
    assert after is not None
    assert (after.plan_name, after.pending) == ("lite", None)
    assert (await invoices(gateway))[-1].amount_cents == 500


async def test_an_interval_change_starts_a_new_cycle(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    await start(gateway, account)
    yearly = Terms(plan="1", plan_name="basic", interval="year", amount_cents=10_000)
    await in_book(gateway, account, lambda book: book.change("7", yearly, now=JAN_31))
    await gateway.billing.run_due(datetime(2027, 3, 1, tzinfo=UTC))
    after = await current(gateway, account)
    assert after is not None
    assert after.interval == "year"
    assert after.current_period_start == datetime(2027, 2, 28, 10, tzinfo=UTC)
    assert after.current_period_end == datetime(2028, 2, 28, 10, tzinfo=UTC)


async def test_illegal_moves_are_conflicts(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    with pytest.raises(IllegalTransition):
        await in_book(gateway, account, lambda book: book.cancel("7", immediately=False))
    with pytest.raises(IllegalTransition):
        await in_book(gateway, account, lambda book: book.change("7", MONTHLY))
    await start(gateway, account)
    with pytest.raises(IllegalTransition) as twice:
        await start(gateway, account)
    assert twice.value.status_code == 409
    trial = Terms(plan="1", plan_name="basic", interval="month", amount_cents=1_000, trial_days=1)
    await in_book(gateway, account, lambda book: book.cancel("7", immediately=True))
    await start(gateway, account, FAILS_LATER, trial)
    await gateway.billing.run_due(JAN_31 + timedelta(days=1))
    with pytest.raises(IllegalTransition, match="past due"):
        await in_book(gateway, account, lambda book: book.change("7", MONTHLY))


async def test_workers_racing_charge_each_renewal_once(gateway_factory: GatewayFactory) -> None:
    """Four engines on their own connection pools run the same year at once."""
    workers = [
        await gateway_factory(plugins=[], extra_plugins=[("shop", ShopPlugin())]) for _ in range(4)
    ]
    gateway = workers[-1]  # (each factory call empties the database: set up after)
    account = await gateway.accounts.create_account("shop", {})
    for customer in range(10):
        await in_book(
            gateway,
            account,
            lambda book, c=customer: book.subscribe(str(c), MONTHLY, card=GOOD, now=JAN_31),
        )
    as_of = datetime(2028, 1, 31, 10, tzinfo=UTC)
    reports = await asyncio.gather(*(worker.billing.run_due(as_of) for worker in workers))
    assert sum(report.renewed for report in reports) == 10 * 12
    paid = await invoices(gateway)
    assert len(paid) == 10 * 13
    assert {i.status for i in paid} == {"paid"}
    assert sorted(i.number for i in paid) == list(range(1, 10 * 13 + 1))  # gapless
    made = await charges(gateway)
    assert len(made) == 10 * 13
    assert len({c.idempotency_key for c in made}) == len(made)
    async with gateway.database.sessions() as session:
        refunded = await session.scalar(
            select(func.count()).where(ProcessorCharge.refunded_at.is_not(None))
        )
    assert refunded == 0


async def test_a_charge_whose_transaction_rolls_back_is_refunded(
    gateway_factory: GatewayFactory,
) -> None:
    gateway, account = await shop(gateway_factory)

    class CallersWriteFailed(Exception):
        pass

    async def subscribe_then_fail() -> None:
        async with gateway.database.transaction() as session:
            book = gateway.billing.book(session, LEDGER, account)
            await book.subscribe("7", MONTHLY, card=GOOD, now=JAN_31)
            raise CallersWriteFailed  # the caller's own bookkeeping after subscribing

    with pytest.raises(CallersWriteFailed):
        await subscribe_then_fail()
    deadline = asyncio.get_running_loop().time() + 10
    while not (made := await charges(gateway)) or made[0].refunded_at is None:
        assert asyncio.get_running_loop().time() < deadline, "the charge was not refunded"
        await asyncio.sleep(0.01)
    assert [charge.status for charge in made] == ["succeeded"]
    assert await current(gateway, account) is None
    kept = await start(gateway, account)  # and a committed one is kept
    assert kept.status == "active"
    assert [charge.refunded_at is None for charge in await charges(gateway)] == [False, True]


async def test_a_running_gateway_renews_through_its_job_queue(
    gateway_factory: GatewayFactory,
) -> None:
    """The billing clock enqueues ``billing.run_due`` as the gateway starts (and every
    minute after); the job queue runs it."""
    gateway, account = await shop(gateway_factory)
    long_ago = datetime.now(UTC) - timedelta(days=40)
    await in_book(
        gateway, account, lambda book: book.subscribe("7", MONTHLY, card=GOOD, now=long_ago)
    )
    await gateway.start()
    try:
        deadline = asyncio.get_running_loop().time() + 30
        while len(await invoices(gateway)) < 2:
            assert asyncio.get_running_loop().time() < deadline, "nothing renewed"
            await asyncio.sleep(0.05)
    finally:
        await gateway.stop()
    renewal = (await invoices(gateway))[1]
    assert (renewal.kind, renewal.status) == ("cycle", "paid")
    assert renewal.paid_at == period_end(long_ago, "month", 0)


async def in_wallet(gateway: Gateway, account: int, work: Callable[[Wallet], Awaitable[T]]) -> T:
    async with gateway.database.transaction() as session:
        return await work(gateway.billing.wallet(session, LEDGER, account))


async def test_a_customer_keeps_one_default_card(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    first = await in_wallet(gateway, account, lambda wallet: wallet.add("7", GOOD))
    second = await in_wallet(gateway, account, lambda wallet: wallet.add("7", FAILS_LATER))
    assert (first.is_default, second.is_default) == (True, False)
    await in_wallet(gateway, account, lambda wallet: wallet.set_default("7", second.id))
    cards = await in_wallet(gateway, account, lambda wallet: wallet.cards("7"))
    assert [(card.last4, card.is_default) for card in cards] == [("4242", False), ("0341", True)]
    other = await gateway.accounts.create_account("other shop", {})
    for owner, customer in ((other, "7"), (account, "8")):
        with pytest.raises(NotFound):
            await in_wallet(gateway, owner, lambda w, c=customer: w.set_default(c, first.id))
    with pytest.raises(CardError):
        await in_wallet(gateway, account, lambda wallet: wallet.add("7", DECLINED))
    assert len(await in_wallet(gateway, account, lambda wallet: wallet.cards("7"))) == 2


async def test_removing_cards(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    subscription = await start(gateway, account)  # its card is the default
    spare = await in_wallet(gateway, account, lambda wallet: wallet.add("7", FAILS_LATER))
    await in_wallet(
        gateway, account, lambda wallet: wallet.remove("7", subscription.payment_method_id or 0)
    )
    [left] = await in_wallet(gateway, account, lambda wallet: wallet.cards("7"))
    assert (left.id, left.is_default) == (spare.id, True)  # the remaining card took over
    with pytest.raises(Conflict, match="last card"):
        await in_wallet(gateway, account, lambda wallet: wallet.remove("7", spare.id))
    await in_book(gateway, account, lambda book: book.cancel("7", immediately=True))
    await in_wallet(gateway, account, lambda wallet: wallet.remove("7", spare.id))
    assert await in_wallet(gateway, account, lambda wallet: wallet.cards("7")) == []
    deadline = asyncio.get_running_loop().time() + 10
    while True:  # the processor forgets removed cards once the removal has committed
        async with gateway.database.sessions() as session:
            kept = await session.scalar(
                select(func.count()).where(ProcessorCard.forgotten_at.is_(None))
            )
        if kept == 0:
            break
        assert asyncio.get_running_loop().time() < deadline, "removed cards were not forgotten"
        await asyncio.sleep(0.01)


async def test_a_new_default_card_pays_the_next_try(gateway_factory: GatewayFactory) -> None:
    gateway, account = await shop(gateway_factory)
    trial = Terms(plan="1", plan_name="basic", interval="month", amount_cents=1_000, trial_days=7)
    await start(gateway, account, FAILS_LATER, trial)
    trial_end = JAN_31 + timedelta(days=7)
    await gateway.billing.run_due(trial_end)
    assert (await current(gateway, account)).status == "past_due"  # type: ignore[union-attr]
    await in_wallet(gateway, account, lambda wallet: wallet.add("7", GOOD, default=True))
    report = await gateway.billing.run_due(trial_end + timedelta(days=1))
    assert report.renewed == 1
    subscription = await current(gateway, account)
    assert subscription is not None
    assert subscription.status == "active"
    assert [charge.status for charge in await charges(gateway)] == ["failed", "succeeded"]
