"""The hosted checkout's test client: a gateway serving launchpad in-process, a plan, a
customer and their checkout session, and the page as a browser uses it (its nonce
cookie sent back, the form's hidden token filled in)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from html import unescape
from typing import Any

import httpx

from tollway.billing import Subscription
from tollway.testing import KeylessProductClient, ProductClientFactory, Tenant
from tollway_launchpad.models import Customer, Plan
from tollway_launchpad.product import LEDGER, PRODUCT

GOOD_CARD = "4242 4242 4242 4242"
DECLINED_CARD = "4000 0000 0000 0002"
SUCCESS_URL = "https://shop.example/welcome?plan=pro"
CANCEL_URL = "https://shop.example/pricing"
PRO = {
    "name": "Pro",
    "slug": "pro",
    "price_monthly_cents": 1900,
    "price_annual_cents": 19000,
    "features": ["Unlimited projects", "Priority support"],
    "quota": {"users": 10, "storage_gb": 100},
}
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]*)"')
NONCE_COOKIE = re.compile(r"checkout_csrf=([A-Za-z0-9_-]+)")


@dataclass(frozen=True)
class Page:
    """A rendered checkout page: what a browser keeps of it to post the form."""

    response: httpx.Response
    nonce: str
    token: str


@dataclass(frozen=True)
class CheckoutClient(KeylessProductClient):
    """Accounts ``owner`` (acme) and ``other`` (globex) with keys holding every
    launchpad scope; ``client`` sends no key (the page's visitors)."""

    async def call(
        self, method: str, path: str, *, expect: int = 200, by: Tenant | None = None, **request: Any
    ) -> Any:
        return await self.product_client.call(method, path, expect=expect, by=by, **request)

    async def plan(self, by: Tenant | None = None, **fields: Any) -> dict[str, Any]:
        """A plan of ``by``'s workspace (the owner's): :data:`PRO` with ``fields``,
        stored as the plans API stores it (that API is tested on its own)."""
        values = {**PRO, **fields}
        async with self.gateway.database.transaction() as session:
            plan = Plan(account_id=(by or self.owner).account_id, **values)
            session.add(plan)
            await session.flush()
            return {"id": plan.id, **values}

    async def customer(self, email: str = "ada@example.com", by: Tenant | None = None) -> Any:
        """``{token, customer: {id}}`` of a new customer of ``by``'s workspace, as
        register answers (the customers API is tested on its own)."""
        account_id = (by or self.owner).account_id
        async with self.gateway.database.transaction() as session:
            customer = Customer(
                account_id=account_id, email=email, email_key=email, password_hash="-"
            )
            session.add(customer)
            await session.flush()
        tokens = await self.gateway.customer_tokens()
        token = tokens.issue(
            account_id=account_id, product=PRODUCT.name, customer_id=str(customer.id)
        )
        return {"token": token, "customer": {"id": customer.id}}

    async def subscription(self, customer_id: int) -> Subscription | None:
        """The customer's live subscription, as the billing engine has it."""
        async with self.gateway.database.transaction() as session:
            book = self.gateway.billing.book(session, LEDGER, self.owner.account_id)
            return await book.subscription(str(customer_id))

    async def open_session(
        self, plan_id: int, token: str, *, expect: int = 200, **fields: Any
    ) -> Any:
        body = {"customer_token": token, "success_url": SUCCESS_URL, "cancel_url": CANCEL_URL}
        return await self.call(
            "POST", f"/checkout/{plan_id}/session", json={**body, **fields}, expect=expect
        )

    async def session_url(self, **plan: Any) -> tuple[str, int]:
        """The path of a new session's page (of ``plan``'s fields over :data:`PRO`),
        and its customer's id."""
        made = await self.plan(**plan)
        registered = await self.customer(f"{made['slug']}@example.com")
        created = await self.open_session(made["id"], registered["token"])
        return _path(created["checkout_url"]), registered["customer"]["id"]

    async def show(self, path: str, **request: Any) -> httpx.Response:
        self.client.cookies.clear()  # each request says which cookie it sends
        return await self.client.get(path, **request)

    async def render(self, path: str) -> Page:
        """The page's form, as a browser receives it (200 asserted)."""
        response = await self.show(path)
        assert response.status_code == 200, response.text
        return Page(response, _nonce(response), _token(response.text))

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
            sent["Cookie"] = f"checkout_csrf={page.nonce}"
        self.client.cookies.clear()
        posted = {
            name: value for name, value in {**form, **(fields or {})}.items() if value is not None
        }
        return await self.client.post(path, data=posted, headers={**sent, **(headers or {})})


def _path(checkout_url: str) -> str:
    assert checkout_url.startswith("http://testserver/checkout/"), checkout_url
    return checkout_url.removeprefix("http://testserver")


def _nonce(response: httpx.Response) -> str:
    found = NONCE_COOKIE.search(response.headers["set-cookie"])
    assert found is not None, response.headers["set-cookie"]
    return found.group(1)


def _token(page: str) -> str:
    found = CSRF_FIELD.search(page)
    assert found is not None, page
    return unescape(found.group(1))


@asynccontextmanager
async def open_checkout(
    product_client: ProductClientFactory,
    *,
    settings: Mapping[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[CheckoutClient]:
    """``product_client("launchpad", settings=..., **options)`` as a :class:`CheckoutClient`."""
    async with product_client(PRODUCT.name, settings=settings, **options) as opened:
        yield CheckoutClient(opened)
