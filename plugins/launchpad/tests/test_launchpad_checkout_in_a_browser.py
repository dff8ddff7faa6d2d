"""The checkout flow as a customer lives it, in Debian's Chromium against ``tollway
serve`` over real HTTP: the shop's backend registers the customer, reads the plan and
makes a session through the API; the customer pays on the hosted page and lands on
the shop's own success page; a signed ``subscription.created`` reaches the shop's
webhook receiver, and the subscription is active. A declined card activates nothing
and the page can then be paid with another; the cancel link leads back to the shop."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, expect

from tollway import Gateway
from tollway.testing import (
    CardPageInBrowser,
    GatewayFactory,
    GatewayProcess,
    WebhookTestReceiver,
    WebSite,
    deployment_settings,
    emitted,
    open_card_page,
)

pytestmark = pytest.mark.slow

PLUGINS = ["launchpad", "developer"]
PRO = {"name": "Pro", "slug": "pro", "price_monthly_cents": 1900, "price_annual_cents": 19000}


@pytest.fixture(scope="module")
def shop() -> Iterator[WebSite]:
    """The workspace's own site, with the pages a checkout returns to."""
    with WebSite({"/welcome": "Welcome to Pro", "/pricing": "Our pricing"}) as running:
        yield running


@dataclass
class Checkout:
    """A gateway process, the shop's API client on it, a customer and their session's
    page, open in the customer's browser."""

    gateway: Gateway
    """The test's own gateway on the server's database (to read the outbox)."""
    api: httpx.AsyncClient
    server: GatewayProcess
    customer_id: int
    tab: CardPageInBrowser

    async def subscription(self) -> dict[str, Any]:
        response = await self.api.get(f"/v1/launchpad/subscriptions/{self.customer_id}")
        assert response.status_code == 200, response.text
        status: dict[str, Any] = response.json()
        return status


@asynccontextmanager
async def checkout(
    gateway_factory: GatewayFactory,
    receiver: WebhookTestReceiver,
    certificate: tuple[Path, Path],
    shop: WebSite,
    browser: Browser,
) -> AsyncIterator[Checkout]:
    """``tollway serve`` on this backend's database; the shop's backend subscribes its
    receiver to ``subscription.created``, makes the plan Pro ($19.00 a month),
    registers a customer, reads the plan for its checkout screen and makes a session;
    the customer's browser opens ``checkout_url``."""
    gateway = await gateway_factory(plugins=PLUGINS)
    account = await gateway.accounts.create_account(
        "shop", {"launchpad": "business", "developer": "standard"}
    )
    key = (await gateway.accounts.create_key(account, name="shop", all_scopes=True)).key
    settings = {
        **deployment_settings(gateway),
        "webhooks_allow_private_addresses": "true",
        "webhooks_ca_file": certificate[0],
    }
    with GatewayProcess(plugins=PLUGINS, **settings) as server:
        async with httpx.AsyncClient(
            base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as api:
            session = await _shop_backend(api, receiver, shop)
            async with open_card_page(browser, session["checkout_url"], button="Pay") as tab:
                yield Checkout(gateway, api, server, session["customer_id"], tab)


async def _shop_backend(
    api: httpx.AsyncClient, receiver: WebhookTestReceiver, shop: WebSite
) -> dict[str, Any]:
    """What the shop's server does before sending its customer to the checkout."""
    endpoint = await api.post(
        "/v1/developer/webhooks",
        json={"url": receiver.url(), "events": ["subscription.created"]},
    )
    assert endpoint.status_code == 201, endpoint.text
    receiver.trust(endpoint.json()["secret"])
    plan = await api.post("/v1/launchpad/plans", json=PRO)
    assert plan.status_code == 201, plan.text
    plan_id = plan.json()["id"]
    registered = await api.post(
        "/v1/launchpad/customers/register",
        json={"email": "ada@example.com", "password": "correct horse battery"},
    )
    assert registered.status_code == 201, registered.text
    shown = await api.get(f"/v1/launchpad/checkout/{plan_id}")
    assert shown.status_code == 200, shown.text
    assert shown.json()["prices"] == {"month": 1900, "year": 19000}
    session = await api.post(
        f"/v1/launchpad/checkout/{plan_id}/session",
        json={
            "customer_token": registered.json()["token"],
            "success_url": f"{shop.url}/welcome?plan=pro",
            "cancel_url": f"{shop.url}/pricing",
        },
    )
    assert session.status_code == 200, session.text
    return {**session.json(), "customer_id": registered.json()["customer"]["id"]}


async def _delivered(receiver: WebhookTestReceiver, count: int) -> list[dict[str, Any]]:
    """The first ``count`` deliveries the receiver verified, their bodies."""
    await receiver.wait_for(count, within=30)
    verified = [request for request in receiver.requests if request.event_id is not None]
    return [json.loads(request.body) for request in verified]


async def test_a_customer_pays_and_the_subscription_is_active(
    gateway_factory: GatewayFactory,
    webhook_receiver: WebhookTestReceiver,
    webhook_certificate: tuple[Path, Path],
    shop: WebSite,
    chromium: Browser,
) -> None:
    async with checkout(
        gateway_factory, webhook_receiver, webhook_certificate, shop, chromium
    ) as bought:
        tab, page = bought.tab, bought.tab.page
        await expect(page.get_by_role("heading", name="Pro")).to_be_visible()
        await expect(page.get_by_text("$19.00 / month")).to_be_visible()
        await tab.fill_card("4242 4242 4242 4242")
        assert await tab.submit() == 303
        await page.wait_for_url(f"{shop.url}/welcome?plan=pro")
        await expect(page.get_by_role("heading", name="Welcome to Pro")).to_be_visible()
        [delivery] = await _delivered(webhook_receiver, 1)
        assert webhook_receiver.rejected == []
        assert delivery["event"] == "subscription.created"
        status = await bought.subscription()
        assert (status["active"], status["status"], status["plan"]["slug"]) == (
            True,
            "active",
            "pro",
        )
        assert delivery["data"]["subscription_id"] == status["subscription_id"]
        assert (delivery["data"]["plan"], delivery["data"]["status"]) == ("pro", "active")
        assert tab.hosts == {bought.server.url.split("/")[2], shop.url.split("/")[2]}


async def test_a_declined_card_activates_nothing_and_another_card_pays(
    gateway_factory: GatewayFactory,
    webhook_receiver: WebhookTestReceiver,
    webhook_certificate: tuple[Path, Path],
    shop: WebSite,
    chromium: Browser,
) -> None:
    async with checkout(
        gateway_factory, webhook_receiver, webhook_certificate, shop, chromium
    ) as bought:
        tab, page = bought.tab, bought.tab.page
        await tab.submit_declined()
        assert (await bought.subscription())["active"] is False
        assert await emitted(bought.gateway) == []  # no event recorded, so none to deliver
        await tab.fill_card("4242 4242 4242 4242")
        assert await tab.submit() == 303
        await page.wait_for_url(f"{shop.url}/welcome?plan=pro")
        [delivery] = await _delivered(webhook_receiver, 1)
        assert delivery["event"] == "subscription.created"
        assert (await bought.subscription())["active"] is True
        events = await emitted(bought.gateway)
        assert [event for _, event, _ in events] == ["subscription.created"]


async def test_the_cancel_link_goes_back_to_the_shop(
    gateway_factory: GatewayFactory,
    webhook_receiver: WebhookTestReceiver,
    webhook_certificate: tuple[Path, Path],
    shop: WebSite,
    chromium: Browser,
) -> None:
    async with checkout(
        gateway_factory, webhook_receiver, webhook_certificate, shop, chromium
    ) as bought:
        page = bought.tab.page
        await page.get_by_role("link", name="Cancel and go back").click()
        await page.wait_for_url(f"{shop.url}/pricing")
        await expect(page.get_by_role("heading", name="Our pricing")).to_be_visible()
        assert (await bought.subscription())["active"] is False
