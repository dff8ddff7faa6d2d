"""``POST /v1/account/payment-methods/setup``: a "Save a card" page of the caller's
account, where it is, until when, where it sends the browser on, and who may ask."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

import pytest
from account_cards_client import RETURN_URL, open_cards
from sqlalchemy import func, select

from tollway import utcnow
from tollway.testing import ProductClientFactory, Tenant
from tollway_account.models import CardSession
from tollway_account.product import BILLING_READ, BILLING_WRITE, PRODUCT

SETUP = f"{PRODUCT.prefix}/payment-methods/setup"


async def test_a_page_of_the_gateway_valid_for_an_hour(
    product_client: ProductClientFactory,
) -> None:
    async with open_cards(product_client) as cards:
        before = utcnow()
        started = await cards.setup()
        assert set(started) == {"setup_url", "expires_at"}
        session_id = cards.session_id(started["setup_url"])  # a page of the gateway
        expires_at = datetime.fromisoformat(started["expires_at"])
        hour = timedelta(hours=1)
        assert before + hour <= expires_at <= utcnow() + hour
        async with cards.gateway.database.transaction() as session:
            row = await session.get(CardSession, hashlib.sha256(session_id.encode()).hexdigest())
            assert row is not None  # stored by its hash: the id itself is nowhere
            assert (row.account_id, row.return_url) == (cards.owner.account_id, None)
            assert (row.completed_at, row.payment_method_id) == (None, None)
        with_return = await cards.page_path(by=cards.other, return_url=RETURN_URL)
        row = await cards.session_row(with_return)
        assert (row.account_id, row.return_url) == (cards.other.account_id, RETURN_URL)


async def test_the_lifetime_is_the_operators(product_client: ProductClientFactory) -> None:
    async with open_cards(product_client, settings={"card_session_ttl": 600}) as cards:
        before = utcnow()
        expires_at = datetime.fromisoformat((await cards.setup())["expires_at"])
        ten_minutes = timedelta(minutes=10)
        assert before + ten_minutes <= expires_at <= utcnow() + ten_minutes


async def test_the_url_is_on_the_public_origin(product_client: ProductClientFactory) -> None:
    async with open_cards(product_client, trusted_proxies=["127.0.0.1/32"]) as cards:
        forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.example.com"}
        started = await cards.call("POST", "/payment-methods/setup", expect=201, headers=forwarded)
        assert started["setup_url"].startswith("https://api.example.com/account/cards/")


async def test_the_body_may_be_left_out_but_is_checked(
    product_client: ProductClientFactory,
) -> None:
    async with open_cards(product_client) as cards:
        await cards.call("POST", "/payment-methods/setup", expect=201, json={})
        for body in ({"return_url": None}, {"return_url": 1}, {"success_url": RETURN_URL}):
            answer = await cards.call("POST", "/payment-methods/setup", expect=400, json=body)
            assert answer["detail"].startswith("Invalid request body"), body
        as_form = await cards.client.post(
            SETUP, data={"return_url": RETURN_URL}, headers=cards.owner.headers
        )
        assert as_form.status_code == 415


@pytest.mark.parametrize(
    "url",
    [
        "/settings/billing",
        "javascript:alert(1)",
        "ftp://app.example/",
        "https://user:secret@app.example/",
        "https://bücher.example/",
        "https://app.example/a b",
        "",
        "https://app.example/" + "a" * 2029,
    ],
)
async def test_the_return_url_is_an_absolute_web_url(
    product_client: ProductClientFactory, url: str
) -> None:
    async with open_cards(product_client) as cards:
        answer = await cards.setup(expect=400, return_url=url)
        assert answer["detail"].startswith("Invalid request body"), answer
        assert "return_url" in answer["detail"], answer
        async with cards.gateway.database.transaction() as session:
            assert await session.scalar(select(func.count()).select_from(CardSession)) == 0


async def test_a_setup_needs_the_billing_write_scope(
    product_client: ProductClientFactory,
) -> None:
    async with open_cards(product_client) as cards:
        account_id = cards.owner.account_id
        reading = await cards.gateway.accounts.create_key(
            account_id, name="reader", scopes=[BILLING_READ]
        )
        refused = await cards.setup(expect=403, by=Tenant(account_id, reading.id, reading.key))
        assert BILLING_WRITE in refused["detail"]
        anonymous = await cards.client.post(SETUP)
        assert anonymous.status_code == 401
        assert set(anonymous.json()) == {"detail"}


async def test_an_idempotency_key_makes_one_session(product_client: ProductClientFactory) -> None:
    async with open_cards(product_client) as cards:
        headers = {**cards.owner.headers, "Idempotency-Key": "add-card-1"}
        first, again = [
            await cards.client.post(SETUP, json={"return_url": RETURN_URL}, headers=headers)
            for _ in range(2)
        ]
        assert (first.status_code, again.status_code) == (201, 201)
        assert again.json() == first.json()
        assert again.headers["idempotent-replayed"] == "true"
        async with cards.gateway.database.transaction() as session:
            assert await session.scalar(select(func.count()).select_from(CardSession)) == 1
