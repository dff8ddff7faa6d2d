"""Saving a card as a tenant lives it, in Debian's Chromium against ``tollway serve``
over real HTTP: the tenant's app asks the account API for a "Save a card" page; the
browser types a card there, saves it and lands back on the app's billing page, and
the card is the account's default on the billing engine. A declined card saves
nothing and another card can then be saved; without a return URL the page says which
card was saved."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from account_cards_client import saved_cards
from playwright.async_api import Browser, Page, async_playwright, expect

from tollway import Gateway
from tollway.testing import (
    GatewayFactory,
    GatewayProcess,
    chromium_launch_options,
    deployment_settings,
)
from tollway_account.product import PRODUCT

pytestmark = pytest.mark.slow

PLUGINS = [PRODUCT.name]
APP_PAGES = {"/settings/billing": "Billing settings"}


class App:
    """The tenant's own web app: a real HTTP server with the page the card page
    returns to (``/settings/billing``)."""

    def __init__(self) -> None:
        class Pages(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                title = APP_PAGES.get(self.path.split("?")[0])
                body = f"<!doctype html><title>{title}</title><h1>{title}</h1>".encode()
                self.send_response(200 if title else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def __enter__(self) -> App:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._http.shutdown()
        self._http.server_close()


@pytest.fixture(scope="module")
def app() -> Iterator[App]:
    with App() as running:
        yield running


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    options = chromium_launch_options()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(**options)
        yield launched
        await launched.close()


@dataclass
class CardPage:
    """A gateway process, the tenant's API client on it and the page its browser opened."""

    gateway: Gateway
    """The test's own gateway on the server's database (to read the saved cards)."""
    account_id: int
    server: GatewayProcess
    setup_url: str
    page: Page
    visited: list[str]
    """Every URL the page requested."""

    async def fill_card(self, number: str) -> None:
        await self.page.get_by_label("Card number").fill(number)
        await self.page.get_by_label("Expiry (MM/YY)").fill("12/34")
        await self.page.get_by_label("CVC").fill("123")
        await self.page.get_by_label("Name on card").fill("Ada Lovelace")

    async def save(self) -> int:
        """Click "Save card"; the status of the form's answer."""
        async with self.page.expect_response(lambda r: r.request.method == "POST") as posted:
            await self.page.get_by_role("button", name="Save card").click()
        return (await posted.value).status

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
        page = await browser.new_page()
        visited: list[str] = []
        page.on("request", lambda request: visited.append(request.url))
        try:
            await page.goto(setup_url)
            yield CardPage(gateway, account_id, server, setup_url, page, visited)
        finally:
            await page.close()


async def test_a_tenant_saves_a_card_and_returns_to_the_app(
    gateway_factory: GatewayFactory, app: App, browser: Browser
) -> None:
    back = f"{app.url}/settings/billing?saved=1"
    async with card_page(gateway_factory, browser, return_url=back) as saving:
        page = saving.page
        await expect(page.get_by_role("heading", name="Save a card")).to_be_visible()
        await expect(page.get_by_text("becomes the default card")).to_be_visible()
        await saving.fill_card("4242 4242 4242 4242")
        assert await saving.save() == 303
        await page.wait_for_url(back)
        await expect(page.get_by_role("heading", name="Billing settings")).to_be_visible()
        assert await saving.cards() == [("visa", "4242", True)]
        origins = {url.split("/")[2] for url in saving.visited}
        assert origins == {saving.server.url.split("/")[2], app.url.split("/")[2]}


async def test_a_declined_card_saves_nothing_and_another_card_is_saved(
    gateway_factory: GatewayFactory, browser: Browser
) -> None:
    async with card_page(gateway_factory, browser) as saving:
        page = saving.page
        await saving.fill_card("4000 0000 0000 0002")
        assert await saving.save() == 422
        await expect(page.get_by_role("alert")).to_have_text("Your card was declined.")
        assert page.url == saving.setup_url
        assert await page.get_by_label("Card number").input_value() == ""
        assert await page.get_by_label("Name on card").input_value() == "Ada Lovelace"
        assert "4000" not in await page.content()
        assert await saving.cards() == []
        await saving.fill_card("5555 5555 5555 4444")
        assert await saving.save() == 200
        await expect(page.get_by_role("heading", name="Card saved")).to_be_visible()
        await expect(page.get_by_text("Your Mastercard ending in 4444")).to_be_visible()
        assert "5555 5555" not in await page.content()
        assert await saving.cards() == [("mastercard", "4444", True)]
