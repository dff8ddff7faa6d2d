"""Time-driven billing walked with the operator's command, ``tollway billing run
--as-of``, on both backends: a renewal, a failed renewal through dunning to
cancellation, cancellation at the period's end and at once, and two processes running
the same year at the same time charging each renewal once.

Subscriptions start through the billing engine at a fixed instant (the checkout page's
own tests pay through the page); the API shows what the command did.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from tollway import Gateway
from tollway.billing import CardDetails, Terms
from tollway.testing import GatewayFactory, emitted, gateway_client, subscribe
from tollway_launchpad.product import EVENTS, LEDGER, PRODUCT

GOOD = CardDetails("4242424242424242", 12, 2034, "123")
FAILS_LATER = CardDetails("4000000000000341", 12, 2034, "123")
STARTED = datetime(2027, 1, 31, 10, 0, tzinfo=UTC)
FIRST_RENEWAL = datetime(2027, 2, 28, 10, 0, tzinfo=UTC)
TOLLWAY = shutil.which("tollway") or str(Path(sys.executable).with_name("tollway"))


class Workspace:
    """A workspace with a plan, talking to the API; customers subscribe at STARTED."""

    def __init__(self, gateway: Gateway, client: httpx.AsyncClient, account: int, key: str):
        self.gateway = gateway
        self.client = client
        self.account = account
        self.headers = {"Authorization": f"Bearer {key}"}
        self.plan: dict[str, Any] = {}

    async def create_plan(self, trial_days: int = 0) -> None:
        body = {
            "name": "Pro",
            "slug": f"pro-{trial_days}",
            "price_monthly_cents": 1900,
            "price_annual_cents": 19000,
            "trial_days": trial_days,
            "features": ["api"],
            "quota": {"users": 5},
        }
        answer = await self.client.post(f"{PRODUCT.prefix}/plans", json=body, headers=self.headers)
        assert answer.status_code == 201, answer.text
        self.plan = answer.json()

    async def customer(self, card: CardDetails, n: int = 0) -> int:
        answer = await self.client.post(
            f"{PRODUCT.prefix}/customers/register",
            json={"email": f"c{n}@example.com", "password": "correct horse", "full_name": "C"},
            headers=self.headers,
        )
        assert answer.status_code == 201, answer.text
        customer_id: int = answer.json()["customer"]["id"]
        terms = Terms(
            plan=str(self.plan["id"]),
            plan_name=self.plan["slug"],
            interval="month",
            amount_cents=self.plan["price_monthly_cents"],
            trial_days=self.plan["trial_days"],
        )
        async with self.gateway.database.transaction() as session:
            book = self.gateway.billing.book(session, LEDGER, self.account)
            await book.subscribe(str(customer_id), terms, card=card, now=STARTED)
        return customer_id

    async def status(self, customer_id: int) -> dict[str, Any]:
        answer = await self.client.get(
            f"{PRODUCT.prefix}/subscriptions/{customer_id}", headers=self.headers
        )
        assert answer.status_code == 200, answer.text
        status: dict[str, Any] = answer.json()
        return status

    async def cancel(self, customer_id: int, *, immediately: bool) -> dict[str, Any]:
        answer = await self.client.request(
            "DELETE",
            f"{PRODUCT.prefix}/subscriptions/{customer_id}",
            json={"immediately": immediately},
            headers=self.headers,
        )
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()
        return result


@asynccontextmanager
async def workspace(gateway_factory: GatewayFactory) -> Any:
    gateway = await gateway_factory(plugins=["launchpad"])
    account = await gateway.accounts.create_account("workspace", {PRODUCT.name: "business"})
    key = await gateway.accounts.create_key(account, name="backend", all_scopes=True)
    await subscribe(gateway, account, list(EVENTS))
    async with gateway_client(gateway) as client:
        yield Workspace(gateway, client, account, key.key)


async def billing_run(gateway: Gateway, as_of: datetime) -> asyncio.subprocess.Process:
    """``tollway billing run --as-of`` in a process of its own, on the gateway's database.

    Awaited, not waited for: this process's gateway keeps running meanwhile (its
    billing clock and webhook dispatcher write to the same database), and an event loop
    blocked mid-transaction would hold SQLite's write lock against the command."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")}
    env.update(TOLLWAY_DATABASE_URL=gateway.settings.database_url, TOLLWAY_PLUGINS="launchpad")
    return await asyncio.create_subprocess_exec(
        TOLLWAY,
        "--traceback",
        "billing",
        "run",
        "--as-of",
        as_of.isoformat(),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finished(process: asyncio.subprocess.Process) -> dict[str, int]:
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    report: dict[str, int] = json.loads(out)
    return report


async def run(gateway: Gateway, as_of: datetime) -> dict[str, int]:
    return await finished(await billing_run(gateway, as_of))


async def sent(gateway: Gateway) -> list[str]:
    return [event for _, event, _ in await emitted(gateway)]


async def test_a_renewal(gateway_factory: GatewayFactory) -> None:
    async with workspace(gateway_factory) as shop:
        await shop.create_plan()
        customer = await shop.customer(GOOD)
        assert (await run(shop.gateway, FIRST_RENEWAL - timedelta(seconds=1)))["renewed"] == 0
        assert (await run(shop.gateway, FIRST_RENEWAL))["renewed"] == 1
        status = await shop.status(customer)
        assert (status["active"], status["status"]) == (True, "active")
        assert status["renews_at"] == "2027-03-31T10:00:00Z"
        assert (await sent(shop.gateway))[-2:] == ["invoice.paid", "subscription.renewed"]


async def test_a_failed_renewal_goes_through_dunning_to_cancellation(
    gateway_factory: GatewayFactory,
) -> None:
    async with workspace(gateway_factory) as shop:
        await shop.create_plan(trial_days=14)
        customer = await shop.customer(FAILS_LATER)
        trial_end = STARTED + timedelta(days=14)
        assert await run(shop.gateway, trial_end) == {
            "renewed": 0,
            "failed": 1,
            "canceled": 0,
            "changed": 0,
            "unpaid": 0,
        }
        status = await shop.status(customer)
        assert (status["active"], status["status"]) == (True, "past_due")
        assert (await run(shop.gateway, trial_end + timedelta(days=4)))[
            "failed"
        ] == 2  # days 1 and 4
        report = await run(shop.gateway, trial_end + timedelta(days=30))
        assert (report["failed"], report["canceled"]) == (1, 1)  # day 9, the last
        status = await shop.status(customer)
        assert (status["active"], status["plan"], status["renews_at"]) == (False, None, None)
        events = await sent(shop.gateway)
        assert events.count("invoice.failed") == 4
        assert events[-1] == "subscription.canceled"


async def test_cancel_at_period_end_then_now(gateway_factory: GatewayFactory) -> None:
    async with workspace(gateway_factory) as shop:
        await shop.create_plan()
        first = await shop.customer(GOOD, 1)
        second = await shop.customer(GOOD, 2)
        later = await shop.cancel(first, immediately=False)
        assert later["cancel_at_period_end"] is True
        assert (await shop.status(first))["active"] is True
        await shop.cancel(second, immediately=True)
        assert (await shop.status(second))["active"] is False
        report = await run(shop.gateway, FIRST_RENEWAL + timedelta(days=1))
        assert (report["renewed"], report["canceled"]) == (0, 1)
        assert (await shop.status(first))["active"] is False


async def test_two_processes_charge_each_renewal_once(gateway_factory: GatewayFactory) -> None:
    async with workspace(gateway_factory) as shop:
        await shop.create_plan()
        customers = [await shop.customer(GOOD, n) for n in range(6)]
        a_year_on = datetime(2028, 1, 31, 10, 0, tzinfo=UTC)
        racing = [await billing_run(shop.gateway, a_year_on) for _ in range(2)]
        reports = await asyncio.gather(*(finished(process) for process in racing))
        assert sum(report["renewed"] for report in reports) == len(customers) * 12
        async with shop.gateway.database.sessions() as session:  # the stored truth
            invoices = await session.scalar(text("SELECT count(*) FROM billing_invoices"))
            charged = await session.scalar(
                text("SELECT count(*) FROM processor_charges WHERE status = 'succeeded'")
            )
            keys = await session.scalar(
                text("SELECT count(DISTINCT idempotency_key) FROM processor_charges")
            )
        assert invoices == charged == keys == len(customers) * 13
        for customer in customers:
            assert (await shop.status(customer))["renews_at"] == "2028-02-29T10:00:00Z"
