"""Saving a card as a tenant lives it, in Debian's Chromium against ``tollway serve``
over real HTTP: the tenant's app asks the account API for a "Save a card" page; the
browser types a card there, saves it and lands back on the app's billing page, and
the card is the account's default on the billing engine. A declined card saves
nothing and another card can then be saved; without a return URL the page says which
card was saved."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from account_cards_client import saved_cards
from playwright.async_api import Browser, expect

from tollway import Gateway
from tollway.testing import (
    CardPageInBrowser,
    GatewayFactory,
    GatewayProcess,
    WebSite,
    deployment_settings,
    open_card_page,
)
from tollway_account.product import PRODUCT

pytestmark = pytest.mark.slow

PLUGINS = [PRODUCT.name]


@pytest.fixture(scope="module")
def app() -> Iterator[WebSite]:
    """The tenant's own web app, with the page the card page returns to."""
    with WebSite({"/settings/billing": "Billing settings"}) as running:
        yield running


@dataclass
class CardPage:
    """A gateway process, and the page the tenant's browser opened on it."""

    gateway: Gateway
    """The test's own gateway on the server's database (to read the saved cards)."""
    account_id: int
    server: GatewayProcess
    tab: CardPageInBrowser

    async def cards(self) -> list[tuple[str, str, bool]]:
        """``(brand, last4, is_default)`` of the account's saved cards."""
        saved = await saved_cards(self.gateway, self.account_id)
        return [(card.brand, card.last4, card.is_default) for card in saved]


@asynccontextmanager
async def card_page(
    gateway_factory: GatewayFactory, browser: Browser, **setup: Any
) -> AsyncIterator[CardPage]:
    """``tollway serve`` on this backend's database; the tenant's app asks for a page
    (with ``setup`` as the body) and the tenant's browser opens ``setup_url``."""
    gateway = await gateway_factory(plugins=PLUGINS)
    account_id = await gateway.accounts.create_account("tenant", {PRODUCT.name: "standard"})
    key = (await gateway.accounts.create_key(account_id, name="app", all_scopes=True)).key
    with GatewayProcess(plugins=PLUGINS, **deployment_settings(gateway)) as server:
        async with httpx.AsyncClient(
            base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as api:
            started = await api.post(f"{PRODUCT.prefix}/payment-methods/setup", json=setup)
            assert started.status_code == 201, started.text
        setup_url = started.json()["setup_url"]
        async with open_card_page(browser, setup_url, button="Save card") as tab:
            yield CardPage(gateway, account_id, server, tab)


async def test_a_tenant_saves_a_card_and_returns_to_the_app(
    gateway_factory: GatewayFactory, app: WebSite, chromium: Browser
) -> None:
    back = f"{app.url}/settings/billing?saved=1"
    async with card_page(gateway_factory, chromium, return_url=back) as saving:
        tab, page = saving.tab, saving.tab.page
        await expect(page.get_by_role("heading", name="Save a card")).to_be_visible()
        await expect(page.get_by_text("becomes the default card")).to_be_visible()
        await tab.fill_card("4242 4242 4242 4242")
        assert await tab.submit() == 303
        await page.wait_for_url(back)
        await expect(page.get_by_role("heading", name="Billing settings")).to_be_visible()
        assert await saving.cards() == [("visa", "4242", True)]
        assert tab.hosts == {saving.server.url.split("/")[2], app.url.split("/")[2]}


async def test_a_declined_card_saves_nothing_and_another_card_is_saved(
    gateway_factory: GatewayFactory, chromium: Browser
) -> None:
    async with card_page(gateway_factory, chromium) as saving:
        tab, page = saving.tab, saving.tab.page
        await tab.submit_declined()
        assert await saving.cards() == []
        await tab.fill_card("5555 5555 5555 4444")
        assert await tab.submit() == 200
        await expect(page.get_by_role("heading", name="Card saved")).to_be_visible()
        await expect(page.get_by_text("Your Mastercard ending in 4444")).to_be_visible()
        assert "5555 5555" not in await page.content()
        assert await saving.cards() == [("mastercard", "4444", True)]
