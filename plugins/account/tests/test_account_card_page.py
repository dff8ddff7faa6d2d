"""The "Save a card" page in-process: what it shows and how it is protected, saving a
card (kept by the engine as the account's default, never the number), declined
cards, unpaid invoices tried with the new card, and sessions that can no longer be
used."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from html import escape

import pytest
from account_cards_client import MASTERCARD, RETURN_URL, CardsClient, open_cards
from sqlalchemy import update

from tollway import utcnow
from tollway.billing import TENANT, CardDetails, Terms
from tollway.testing import GOOD_CARD, ProductClientFactory, assert_card_form, database_dump
from tollway_account.models import CardSession
from tollway_account.product import LEDGER

FEW = {"account-cards": {"plans": {"anonymous": {"limits": {"cards_per_minute": 3}}}}}
DIGITS = re.compile(r"\D")


async def test_the_page_shows_a_card_form(product_client: ProductClientFactory) -> None:
    async with open_cards(product_client) as cards:
        path = await cards.page_path()
        page = (await cards.render(path)).response
        html = page.text
        assert "<title>Save a card</title>" in html
        assert "<h1>Save a card</h1>" in html
        assert "<p>The card becomes the default card for your account's subscriptions.</p>" in html
        assert_card_form(page, "Save card")
        assert "<a " not in html  # no return_url: no way back to name
        back = (await cards.render(await cards.page_path(return_url=RETURN_URL))).response
        assert f'<a class="cancel" href="{escape(RETURN_URL)}">Cancel and go back</a>' in back.text


async def test_the_page_cannot_be_framed_cached_or_leak_its_address(
    product_client: ProductClientFactory,
) -> None:
    async with open_cards(product_client) as cards:
        path = await cards.page_path()
        page = await cards.render(path)
        cards.assert_protected(page, path)
        assert page.policy["form-action"] == "'self'"
        onward = await cards.render(await cards.page_path(return_url=RETURN_URL))
        assert onward.policy["form-action"] == "'self' https://app.example"


async def test_saving_keeps_the_card_as_the_default_and_never_its_number(
    product_client: ProductClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_cards(product_client) as cards:
        with every_record(caplog.handler):
            path = await cards.page_path()
            saved = await cards.submit(path, await cards.render(path))
            assert saved.status_code == 200, saved.text
            assert "<h1>Card saved</h1>" in saved.text
            assert "Your Visa card ending in 4242 is now the default card" in saved.text
            assert "<form" not in saved.text
            assert "form-action 'none'" in saved.headers["content-security-policy"]
            [card] = await cards.cards()
            assert (card.brand, card.last4, card.exp_month, card.exp_year) == (
                "visa",
                "4242",
                12,
                2034,
            )
            assert card.is_default
            assert await cards.cards(cards.other) == []
            row = await cards.session_row(path)
            assert row.completed_at is not None
            assert row.payment_method_id == card.id
            number = DIGITS.sub("", GOOD_CARD)
            dump = await database_dump(cards.gateway)
            assert "4242" in dump  # the dump holds the stored data: the last four digits
            assert "visa ending 4242" in caplog.text  # the processor's log was seen
            for shown in (number, GOOD_CARD, number[:12]):
                assert shown not in dump
                assert shown not in caplog.text


@contextmanager
def every_record(handler: logging.Handler) -> Iterator[None]:
    """Every log record from DEBUG up reaches ``handler`` (caplog's) while the app runs:
    the app's logging set-up replaced the root logger's handlers when it started."""
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def test_the_new_card_becomes_the_default(product_client: ProductClientFactory) -> None:
    async with open_cards(product_client) as cards:
        first = await cards.page_path()
        assert (await cards.submit(first, await cards.render(first))).status_code == 200
        second = await cards.page_path(return_url=RETURN_URL)
        saved = await cards.submit(second, await cards.render(second), MASTERCARD)
        assert (saved.status_code, saved.headers["location"]) == (303, RETURN_URL)
        assert saved.headers["cache-control"] == "no-store"
        by_brand = {card.brand: card for card in await cards.cards()}
        assert set(by_brand) == {"visa", "mastercard"}
        assert by_brand["mastercard"].is_default
        assert not by_brand["visa"].is_default


async def test_a_declined_card_saves_nothing(product_client: ProductClientFactory) -> None:
    async with open_cards(product_client) as cards:
        path = await cards.page_path()
        page = await cards.render(path)
        await cards.submit_declined(path, page)
        assert await cards.cards() == []
        assert (await cards.session_row(path)).completed_at is None
        incomplete = await cards.submit(path, page, fields={"cvc": None})
        assert incomplete.status_code == 422
        assert "Fill in the card number" in incomplete.text
        # The form shown again (same cookie, same token) saves another card.
        assert (await cards.submit(path, page, GOOD_CARD)).status_code == 200
        assert [card.last4 for card in await cards.cards()] == ["4242"]


async def test_unpaid_invoices_are_tried_with_the_new_card(
    product_client: ProductClientFactory,
) -> None:
    async with open_cards(product_client) as cards:
        account_id = cards.owner.account_id
        terms = Terms("pro", "pro", "month", amount_cents=1900, trial_days=1)
        declining = CardDetails("4000000000000341", 12, 2034, "123")  # saved; charges fail
        async with cards.gateway.database.transaction() as session:
            book = cards.gateway.billing.book(session, LEDGER, account_id)
            started = await book.subscribe(TENANT, terms, card=declining, line="extra")
        await cards.gateway.billing.run_due(started.current_period_end + timedelta(minutes=1))
        assert await _status(cards, account_id) == "past_due"
        path = await cards.page_path()
        assert (await cards.submit(path, await cards.render(path))).status_code == 200
        assert await _status(cards, account_id) == "active"


async def _status(cards: CardsClient, account_id: int) -> str:
    """The status of the account's subscription on the line ``extra``."""
    async with cards.gateway.database.transaction() as session:
        book = cards.gateway.billing.book(session, LEDGER, account_id)
        found = await book.subscription(TENANT, "extra")
        assert found is not None
        return found.status


async def test_a_used_page_saves_no_second_card(product_client: ProductClientFactory) -> None:
    async with open_cards(product_client) as cards:
        path = await cards.page_path(return_url=RETURN_URL)
        page = await cards.render(path)
        answers = await asyncio.gather(*(cards.submit(path, page) for _ in range(3)))
        assert sorted(answer.status_code for answer in answers) == [303, 410, 410]
        for answer in await cards.assert_closed(path, page, 410, "Card already saved", MASTERCARD):
            assert f'href="{escape(RETURN_URL)}"' in answer.text
        assert [card.brand for card in await cards.cards()] == ["visa"]


async def test_an_expired_page_saves_nothing(product_client: ProductClientFactory) -> None:
    async with open_cards(product_client) as cards:
        path = await cards.page_path()
        page = await cards.render(path)
        async with cards.gateway.database.transaction() as session:
            await session.execute(update(CardSession).values(expires_at=utcnow()))
        await cards.assert_closed(path, page, 410, "Link expired")
        assert await cards.cards() == []


async def test_an_unknown_session_is_a_page(product_client: ProductClientFactory) -> None:
    async with open_cards(product_client) as cards:
        await cards.page_path()
        for path in ("/account/cards/" + "A" * 43, "/account/cards/short"):
            await cards.assert_closed(path, None, 404, "Page not found")


async def test_a_form_that_is_not_the_pages_own_saves_nothing(
    product_client: ProductClientFactory,
) -> None:
    async with open_cards(product_client) as cards:
        path = await cards.page_path()
        other_path = await cards.page_path(by=cards.other)
        page = await cards.render(path)
        other_page = await cards.render(other_path)
        forged = {
            "no cookie, no token": await cards.submit(path, None),
            "another account's form": await cards.submit(path, other_page),
            "a launchpad cookie": await cards.submit(
                path, page, headers={"Cookie": f"checkout_csrf={page.nonce}"}
            ),
            "a wrong token": await cards.submit(path, page, fields={"csrf_token": "x" * 43}),
            "from another site": await cards.submit(
                path, page, headers={"Sec-Fetch-Site": "cross-site"}
            ),
        }
        for why, refused in forged.items():
            assert refused.status_code == 403, why
            assert "<h1>Form expired</h1>" in refused.text, why
            assert f'href="{path}"' in refused.text, why
        assert await cards.cards() == []
        assert await cards.cards(cards.other) == []


async def test_bodies_other_than_the_form_are_refused(
    product_client: ProductClientFactory,
) -> None:
    async with open_cards(product_client) as cards:
        path = await cards.page_path()
        page = await cards.render(path)
        cookie = {"Cookie": f"account_cards_csrf={page.nonce}"}
        as_json = await cards.client.post(path, json={"csrf_token": page.token}, headers=cookie)
        assert as_json.status_code == 415
        assert "<h1>Form not sent</h1>" in as_json.text
        assert (await cards.submit(path, page, fields={"name": "a" * 5000})).status_code == 413


async def test_visitors_are_limited_per_address(product_client: ProductClientFactory) -> None:
    async with open_cards(product_client, products=FEW) as cards:
        path = await cards.page_path()
        for _ in range(3):
            assert (await cards.show(path)).status_code == 200
        refused = await cards.show(path)
        assert refused.status_code == 429
        assert refused.json()["detail"].startswith("Too many card page requests from your address")
