"""The "Save a card" page's test client: a gateway serving the account product
in-process, "Save a card" sessions made through the API, and the page as a browser
uses it (its nonce cookie sent back, the form's hidden token filled in)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import MetaData, select

from tollway import Gateway
from tollway.billing import TENANT, PaymentMethod
from tollway.billing.hosted import id_hash
from tollway.testing import KeylessProductClient, ProductClientFactory, Tenant
from tollway_account.models import CardSession
from tollway_account.product import CARDS, LEDGER, PRODUCT

GOOD_CARD = "4242 4242 4242 4242"
DECLINED_CARD = "4000 0000 0000 0002"
"""Refused when saved."""
MASTERCARD = "5555 5555 5555 4444"
RETURN_URL = "https://app.example/settings/billing?saved=1"
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]*)"')
NONCE_COOKIE = re.compile(r"account_cards_csrf=([A-Za-z0-9_-]+)")
PAGE_URL = f"http://testserver{CARDS.prefix}/"


@dataclass(frozen=True)
class Page:
    """A rendered card page: what a browser keeps of it to post the form."""

    response: httpx.Response
    nonce: str
    token: str


@dataclass(frozen=True)
class CardsClient(KeylessProductClient):
    """Accounts ``owner`` (acme) and ``other`` (globex) with keys holding every account
    scope; ``client`` sends no key (the page's visitors)."""

    async def call(
        self, method: str, path: str, *, expect: int = 200, by: Tenant | None = None, **request: Any
    ) -> Any:
        return await self.product_client.call(method, path, expect=expect, by=by, **request)

    async def setup(self, *, expect: int = 201, by: Tenant | None = None, **body: Any) -> Any:
        """``POST /v1/account/payment-methods/setup``, with ``body`` as JSON if any."""
        sent = {"json": body} if body else {}
        return await self.call("POST", "/payment-methods/setup", expect=expect, by=by, **sent)

    async def page_path(self, *, by: Tenant | None = None, **body: Any) -> str:
        """The path of a new session's page (``by``'s account, the owner's by default)."""
        started = await self.setup(by=by, **body)
        setup_url: str = started["setup_url"]
        assert setup_url.startswith(PAGE_URL), setup_url
        return setup_url.removeprefix("http://testserver")

    async def show(self, path: str, **request: Any) -> httpx.Response:
        self.client.cookies.clear()  # each request says which cookie it sends
        return await self.client.get(path, **request)

    async def render(self, path: str) -> Page:
        """The page's form, as a browser receives it (200 asserted)."""
        response = await self.show(path)
        assert response.status_code == 200, response.text
        nonce = NONCE_COOKIE.search(response.headers["set-cookie"])
        token = CSRF_FIELD.search(response.text)
        assert nonce is not None, response.headers["set-cookie"]
        assert token is not None, response.text
        return Page(response, nonce.group(1), unescape(token.group(1)))

    async def submit(
        self,
        path: str,
        page: Page | None,
        card: str = GOOD_CARD,
        *,
        fields: Mapping[str, str | None] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """The form of ``page`` posted as a browser posts it (its cookie, its token,
        ``Sec-Fetch-Site: same-origin``); ``page=None`` posts with neither. ``fields``
        change the form's fields; ``None`` leaves one out."""
        form = {"card_number": card, "expiry": "12/34", "cvc": "123", "name": "Ada Lovelace"}
        sent = {"Sec-Fetch-Site": "same-origin"}
        if page is not None:
            form["csrf_token"] = page.token
            sent["Cookie"] = f"account_cards_csrf={page.nonce}"
        self.client.cookies.clear()
        posted = {
            name: value for name, value in {**form, **(fields or {})}.items() if value is not None
        }
        return await self.client.post(path, data=posted, headers={**sent, **(headers or {})})

    async def cards(self, by: Tenant | None = None) -> list[PaymentMethod]:
        """The account's saved cards, as the billing engine has them."""
        return await saved_cards(self.gateway, (by or self.owner).account_id)

    async def session_row(self, path: str) -> CardSession:
        """The stored session of the page at ``path``."""
        async with self.gateway.database.transaction() as session:
            row = await session.get(CardSession, id_hash(path.rsplit("/", 1)[1]))
            assert row is not None
            return row


async def saved_cards(gateway: Gateway, account_id: int) -> list[PaymentMethod]:
    """The account's cards on the platform ledger."""
    async with gateway.database.transaction() as session:
        return await gateway.billing.wallet(session, LEDGER, account_id).cards(TENANT)


async def database_dump(gateway: Gateway) -> str:
    """Everything the database holds: the SQLite file (and its write-ahead log) as
    bytes, or every row of every table on PostgreSQL."""
    if gateway.database.is_sqlite:
        path = Path(gateway.settings.database_url.split("///", 1)[1])
        files = [path, path.with_name(f"{path.name}-wal")]
        return "".join(file.read_bytes().decode("latin-1") for file in files if file.exists())
    metadata = MetaData()
    async with gateway.database.transaction() as session:
        connection = await session.connection()
        await connection.run_sync(metadata.reflect)
        rows = [
            repr(row)
            for table in metadata.sorted_tables
            for row in (await session.execute(select(table))).all()
        ]
    return "\n".join(rows)


@asynccontextmanager
async def open_cards(
    product_client: ProductClientFactory,
    *,
    settings: Mapping[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[CardsClient]:
    """``product_client("account", settings=..., **options)`` as a :class:`CardsClient`."""
    async with product_client(PRODUCT.name, settings=settings, **options) as opened:
        yield CardsClient(opened)
