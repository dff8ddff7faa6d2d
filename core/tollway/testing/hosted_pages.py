"""Hosted card pages (:mod:`tollway.billing.hosted`) in tests: a page as a browser uses
it, in-process (:class:`HostedPageClient`: shown, its nonce cookie and hidden token
sent back with the form) or in Chromium (:func:`open_card_page`); what every such page
answers, asserted once for all of them; and the session id a contract run asks for.

A product's page tests subclass :class:`HostedPageClient` with the name of the page's
nonce cookie and the path its pages are under, and add what their product does.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import httpx
import yaml

from tollway.billing.hosted import SESSION_ID
from tollway.testing.clients import BASE_URL
from tollway.testing.products import KeylessProductClient

if TYPE_CHECKING:
    from playwright.async_api import Browser
    from playwright.async_api import Page as BrowserPage

GOOD_CARD = "4242 4242 4242 4242"
"""As typed into a page's form: saved, and every charge succeeds."""
DECLINED_CARD = "4000 0000 0000 0002"
"""As typed into a page's form: refused when saved."""
_CARD_FIELDS = (
    ("card-number", "Card number"),
    ("card-expiry", "Expiry (MM/YY)"),
    ("card-cvc", "CVC"),
    ("card-name", "Name on card"),
)
"""Every page's card fields: their ids and labels."""
_TOKEN_FIELD = re.compile(r'name="csrf_token" value="([^"]*)"')
_LOADS_OR_RUNS = re.compile(r"<script|src=|url\(|@import|\son\w+=")


def form_token(html: str) -> str:
    """The hidden token of the form in ``html`` (asserted there)."""
    found = _TOKEN_FIELD.search(html)
    assert found is not None, html
    return unescape(found.group(1))


def assert_card_form(page: httpx.Response, button: str) -> None:
    """``page`` is a card form in HTML: posted to itself, its fields labelled, submitted
    by ``button``, and loading or running nothing (no script, source, stylesheet
    import or event handler)."""
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    html = page.text
    assert '<form method="post"' in html
    for field, label in _CARD_FIELDS:
        assert f'<label for="{field}">{label}</label><input id="{field}"' in html
    assert f'<button type="submit">{button}</button>' in html
    assert not _LOADS_OR_RUNS.search(html), html


@dataclass(frozen=True)
class RenderedPage:
    """A page with its form, as a browser received it: what it keeps to post the form."""

    response: httpx.Response
    nonce: str
    """The value of the page's nonce cookie."""
    token: str
    """The form's hidden token."""

    @property
    def policy(self) -> dict[str, str]:
        """The page's Content-Security-Policy: each directive's value, by name."""
        header = self.response.headers["content-security-policy"]
        return dict(directive.strip().split(" ", 1) for directive in header.split(";"))


@dataclass(frozen=True)
class HostedPageClient(KeylessProductClient):
    """A product's hosted card page as a browser uses it: ``client`` (no key) shows a
    page and posts its form back with the page's cookie and token."""

    nonce_cookie: ClassVar[str]
    """The name of the page's nonce cookie (``checkout_csrf``)."""
    pages: ClassVar[str]
    """The path the pages are under, each at ``<pages>/<session id>`` (``/checkout``)."""

    def session_id(self, url: str) -> str:
        """The session id in ``url``, a page of the test client's gateway (asserted, like
        the id's form)."""
        prefix = f"{BASE_URL}{self.pages}/"
        assert url.startswith(prefix), url
        session_id = url.removeprefix(prefix)
        assert SESSION_ID.fullmatch(session_id), url
        return session_id

    def path_of(self, url: str) -> str:
        """The path of ``url``, a page of the test client's gateway (asserted)."""
        return f"{self.pages}/{self.session_id(url)}"

    async def show(self, path: str, **request: Any) -> httpx.Response:
        """``GET path`` with only the cookies ``request`` sends."""
        self.client.cookies.clear()
        return await self.client.get(path, **request)

    async def render(self, path: str) -> RenderedPage:
        """The page's form, as a browser receives it (200 asserted)."""
        response = await self.show(path)
        assert response.status_code == 200, response.text
        set_cookie = response.headers["set-cookie"]
        nonce = re.search(rf"{self.nonce_cookie}=([A-Za-z0-9_-]+)", set_cookie)
        assert nonce is not None, set_cookie
        return RenderedPage(response, nonce.group(1), form_token(response.text))

    async def submit(
        self,
        path: str,
        page: RenderedPage | None,
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
            sent["Cookie"] = f"{self.nonce_cookie}={page.nonce}"
        self.client.cookies.clear()
        posted = {
            name: value for name, value in {**form, **(fields or {})}.items() if value is not None
        }
        return await self.client.post(path, data=posted, headers={**sent, **(headers or {})})

    async def submit_declined(self, path: str, page: RenderedPage) -> httpx.Response:
        """The form of ``page`` posted with :data:`DECLINED_CARD`, answered as every
        page answers a declined card (asserted): 422, the form again saying so, the
        number typed not written back but the name kept, never framed."""
        declined = await self.submit(path, page, DECLINED_CARD)
        assert declined.status_code == 422, declined.text
        assert '<p class="error" role="alert">Your card was declined.</p>' in declined.text
        assert "4000" not in declined.text
        assert 'value="Ada Lovelace"' in declined.text
        assert declined.headers["x-frame-options"] == "DENY"
        return declined

    async def assert_closed(
        self,
        path: str,
        page: RenderedPage | None,
        status: int,
        heading: str,
        card: str = GOOD_CARD,
    ) -> list[httpx.Response]:
        """The page at ``path`` takes no card (asserted): shown, or ``page``'s form
        posted to it with ``card``, it answers ``status`` with an HTML page headed
        ``heading`` and without a form. The two answers, for what else the product's
        page says."""
        answers = [await self.show(path), await self.submit(path, page, card)]
        for answer in answers:
            assert answer.status_code == status, (path, answer.text)
            assert answer.headers["content-type"] == "text/html; charset=utf-8", path
            assert f"<h1>{heading}</h1>" in answer.text, (path, answer.text)
            assert "<form" not in answer.text, path
        return answers

    def assert_protected(self, page: RenderedPage, path: str) -> None:
        """``page``, shown at ``path``, carries what protects every page's form: never
        framed, cached, sniffed or its address sent on; a Content-Security-Policy
        allowing nothing but its own inline style; a 22-character nonce cookie for
        ``path`` alone, out of scripts' and other sites' reach (and not ``Secure``:
        the test's gateway answers plain http). The policy's ``form-action`` is the
        product's to check."""
        headers = page.response.headers
        assert headers["x-frame-options"] == "DENY"
        assert headers["cache-control"] == "no-store"
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["x-content-type-options"] == "nosniff"
        policy = page.policy
        assert policy["default-src"] == "'none'"
        assert policy["frame-ancestors"] == "'none'"
        assert policy["base-uri"] == "'none'"
        assert re.fullmatch(r"'sha256-[A-Za-z0-9+/]{43}='", policy["style-src"]), policy
        cookie = [part.strip() for part in headers["set-cookie"].split(";")]
        assert re.fullmatch(rf"{self.nonce_cookie}=[A-Za-z0-9_-]{{22}}", cookie[0]), cookie
        assert f"Path={path}" in cookie
        assert {"HttpOnly", "SameSite=Strict"} <= set(cookie)
        assert "Secure" not in cookie


@dataclass(frozen=True)
class CardPageInBrowser:
    """A page open in a browser, its card typed and its form posted as a visitor does."""

    page: BrowserPage
    url: str
    """Where the page was opened."""
    button: str
    """The label of the button posting the form (``Pay``)."""
    visited: list[str]
    """Every URL the page requested, in order."""

    @property
    def hosts(self) -> set[str]:
        """The ``host:port`` of every URL the page requested."""
        return {url.split("/")[2] for url in self.visited}

    async def fill_card(self, number: str) -> None:
        """``number`` typed into the form, with an expiry, a CVC and a name."""
        await self.page.get_by_label("Card number").fill(number)
        await self.page.get_by_label("Expiry (MM/YY)").fill("12/34")
        await self.page.get_by_label("CVC").fill("123")
        await self.page.get_by_label("Name on card").fill("Ada Lovelace")

    async def submit(self) -> int:
        """The button clicked; the status of the form's answer."""
        async with self.page.expect_response(lambda r: r.request.method == "POST") as posted:
            await self.page.get_by_role("button", name=self.button).click()
        return (await posted.value).status

    async def submit_declined(self) -> None:
        """:data:`DECLINED_CARD` typed and the form posted, answered as every page
        answers a declined card (asserted): 422, the form again at the same address
        saying so, the number typed gone from the field and the page, the name kept."""
        from playwright.async_api import expect  # a test extra: imported by page tests only

        await self.fill_card(DECLINED_CARD)
        assert await self.submit() == 422
        await expect(self.page.get_by_role("alert")).to_have_text("Your card was declined.")
        assert self.page.url == self.url
        assert await self.page.get_by_label("Card number").input_value() == ""
        assert await self.page.get_by_label("Name on card").input_value() == "Ada Lovelace"
        assert "4000" not in await self.page.content()


@asynccontextmanager
async def open_card_page(
    browser: Browser, url: str, *, button: str
) -> AsyncIterator[CardPageInBrowser]:
    """The page at ``url`` in a new page of ``browser`` (the ``chromium`` fixture's),
    its form posted by ``button``; closed afterwards."""
    page = await browser.new_page()
    visited: list[str] = []
    page.on("request", lambda request: visited.append(request.url))
    try:
        await page.goto(url)
        yield CardPageInBrowser(page, url, button, visited)
    finally:
        await page.close()


def example_session_id(contract: Path, page: str) -> str:
    """The session id ``contract`` (an OpenAPI file) gives as the example in the path
    ``page`` (``/checkout/{session_id}``): a contract run sends it, so a session given
    that id is the open page the run shows."""
    document = yaml.safe_load(contract.read_text())
    [parameter] = document["paths"][page]["parameters"]
    example: str = parameter["example"]
    return example
