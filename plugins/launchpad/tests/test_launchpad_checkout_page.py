"""The hosted checkout page in-process: what it shows and how it is protected (headers,
escaping, the form's token), paying it, declined cards, double submits, and sessions
that can no longer be paid."""

from __future__ import annotations

import asyncio
from html import escape

from checkout_client import CANCEL_URL, SUCCESS_URL, open_checkout
from sqlalchemy import select, update

from tollway import utcnow
from tollway.testing import (
    GOOD_CARD,
    ProductClientFactory,
    assert_card_form,
    emitted,
    form_token,
    subscribe,
)
from tollway_launchpad.models import CheckoutSession, Plan

INCOMPLETE = "Fill in the card number, its expiry date (MM/YY) and its CVC."
FEW = {"launchpad-checkout": {"plans": {"anonymous": {"limits": {"checkout_per_minute": 3}}}}}


async def test_the_page_shows_the_offer_and_a_card_form(
    product_client: ProductClientFactory,
) -> None:
    async with open_checkout(product_client) as checkout:
        path, _ = await checkout.session_url(trial_days=14)
        page = (await checkout.render(path)).response
        html = page.text
        assert "<h1>Pro</h1>" in html
        assert "$19.00 / month" in html
        assert "14-day free trial" in html
        assert "<li>Unlimited projects</li><li>Priority support</li>" in html
        assert_card_form(page, "Pay")
        assert f'href="{CANCEL_URL}"' in html


async def test_an_annual_price_without_a_trial(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        plan = await checkout.plan(price_annual_cents=123_456)
        token = (await checkout.customer())["token"]
        created = await checkout.open_session(plan["id"], token, billing_interval="year")
        html = (await checkout.render(checkout.path_of(created["checkout_url"]))).response.text
        assert "$1,234.56 / year" in html
        assert "free trial" not in html


async def test_the_page_cannot_be_framed_cached_or_leak_its_address(
    product_client: ProductClientFactory,
) -> None:
    async with open_checkout(product_client) as checkout:
        path, _ = await checkout.session_url()
        page = await checkout.render(path)
        checkout.assert_protected(page, path)
        assert page.policy["form-action"] == "'self' https://shop.example"
        missing = await checkout.show("/checkout/" + "x" * 43)
        assert missing.headers["x-frame-options"] == "DENY"
        assert "form-action 'none'" in missing.headers["content-security-policy"]


async def test_what_a_workspace_wrote_is_escaped(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        plan = await checkout.plan(
            name="<script>alert('name')</script>",
            features=['"><img src=x onerror=alert(1)>', "Fast & <b>bold</b>"],
        )
        token = (await checkout.customer())["token"]
        cancel = 'https://shop.example/back?next="><script>alert(1)</script>'
        created = await checkout.open_session(plan["id"], token, cancel_url=cancel)
        html = (await checkout.render(checkout.path_of(created["checkout_url"]))).response.text
        assert "<script" not in html
        assert "<img" not in html
        assert "<b>" not in html
        assert "<h1>&lt;script&gt;alert(&#x27;name&#x27;)&lt;/script&gt;</h1>" in html
        assert "<title>Checkout: &lt;script&gt;" in html
        assert "<li>Fast &amp; &lt;b&gt;bold&lt;/b&gt;</li>" in html
        assert f'href="{escape(cancel)}"' in html


async def test_paying_starts_the_subscription(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        await subscribe(checkout.gateway, checkout.owner.account_id, ["subscription.created"])
        path, customer_id = await checkout.session_url()
        paid = await checkout.submit(path, await checkout.render(path))
        assert paid.status_code == 303
        assert paid.headers["location"] == SUCCESS_URL
        assert paid.headers["cache-control"] == "no-store"
        assert paid.headers["referrer-policy"] == "no-referrer"
        subscription = await checkout.subscription(customer_id)
        assert subscription is not None
        assert (subscription.status, subscription.plan_name) == ("active", "pro")
        assert (subscription.interval, subscription.amount_cents) == ("month", 1900)
        [(account, event, data)] = await emitted(checkout.gateway)
        assert (account, event) == (checkout.owner.account_id, "subscription.created")
        assert (data["subscription_id"], data["plan"], data["status"]) == (
            subscription.id,
            "pro",
            "active",
        )
        async with checkout.gateway.database.transaction() as session:
            row = await session.scalar(select(CheckoutSession))
            assert row is not None
            assert row.completed_at is not None
            assert row.subscription_id == subscription.id
        again = await checkout.show(path)
        assert again.status_code == 410
        assert "<h1>Already paid</h1>" in again.text
        assert f'href="{escape(SUCCESS_URL)}"' in again.text
        assert "<form" not in again.text


async def test_a_trial_starts_without_a_charge(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        await subscribe(
            checkout.gateway, checkout.owner.account_id, ["subscription.created", "invoice.paid"]
        )
        path, customer_id = await checkout.session_url(trial_days=14)
        assert (await checkout.submit(path, await checkout.render(path))).status_code == 303
        subscription = await checkout.subscription(customer_id)
        assert subscription is not None
        assert subscription.status == "trialing"
        assert [event for _, event, _ in await emitted(checkout.gateway)] == [
            "subscription.created"
        ]


async def test_a_declined_card_activates_nothing(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        await subscribe(checkout.gateway, checkout.owner.account_id, ["subscription.created"])
        path, customer_id = await checkout.session_url()
        page = await checkout.render(path)
        declined = await checkout.submit_declined(path, page)
        assert await checkout.subscription(customer_id) is None
        assert await emitted(checkout.gateway) == []
        async with checkout.gateway.database.transaction() as session:
            row = await session.scalar(select(CheckoutSession))
            assert row is not None
            assert row.completed_at is None
        # The re-rendered form (same cookie) pays with another card.
        assert form_token(declined.text) == page.token
        paid = await checkout.submit(path, page, GOOD_CARD)
        assert paid.status_code == 303
        assert await checkout.subscription(customer_id) is not None


async def test_an_incomplete_or_invalid_card_is_asked_for_again(
    product_client: ProductClientFactory,
) -> None:
    async with open_checkout(product_client) as checkout:
        path, customer_id = await checkout.session_url()
        page = await checkout.render(path)
        for fields, message in (
            ({"card_number": " "}, INCOMPLETE),
            ({"cvc": None}, INCOMPLETE),
            ({"expiry": None}, INCOMPLETE),
            ({"expiry": "13/30"}, "Enter the expiry date as MM/YY."),
            ({"expiry": "1230"}, "Enter the expiry date as MM/YY."),
            ({"name": "A" * 201}, "The name on the card can be at most 200 characters."),
            ({"card_number": "4242 4242 4242 4241"}, "Your card number is invalid."),
            ({"expiry": "01/20"}, "Your card has expired."),
        ):
            answer = await checkout.submit(path, page, fields=fields)
            assert answer.status_code == 422, fields
            assert f'role="alert">{message}</p>' in answer.text, (fields, answer.text)
        assert await checkout.subscription(customer_id) is None
        four_digit_year = await checkout.submit(path, page, fields={"expiry": "12 / 2034"})
        assert four_digit_year.status_code == 303


async def test_a_form_that_is_not_the_pages_own_is_refused(
    product_client: ProductClientFactory,
) -> None:
    async with open_checkout(product_client) as checkout:
        path, customer_id = await checkout.session_url()
        other_path, _ = await checkout.session_url(slug="other")
        page = await checkout.render(path)
        other_page = await checkout.render(other_path)
        forged = {
            "no cookie, no token": await checkout.submit(path, None),
            "a token without its cookie": await checkout.submit(path, page, headers={"Cookie": ""}),
            "another nonce": await checkout.submit(
                path, page, headers={"Cookie": f"checkout_csrf={other_page.nonce}"}
            ),
            "another session's form": await checkout.submit(path, other_page),
            "a wrong token": await checkout.submit(path, page, fields={"csrf_token": "x" * 43}),
            "from another site": await checkout.submit(
                path, page, headers={"Sec-Fetch-Site": "cross-site"}
            ),
            "from a sibling site": await checkout.submit(
                path, page, headers={"Sec-Fetch-Site": "same-site"}
            ),
        }
        # A browser sending no fetch metadata: its Origin decides.
        form = {"csrf_token": page.token, "card_number": GOOD_CARD, "expiry": "1/34", "cvc": "123"}
        cookie = f"checkout_csrf={page.nonce}"
        forged["an old browser, from another origin"] = await checkout.client.post(
            path, data=form, headers={"Cookie": cookie, "Origin": "https://evil.example"}
        )
        for why, refused in forged.items():
            assert refused.status_code == 403, why
            assert "<h1>Form expired</h1>" in refused.text, why
            assert f'href="{path}"' in refused.text, why
            assert refused.headers["x-frame-options"] == "DENY", why
        assert await checkout.subscription(customer_id) is None
        # The page's own form sends "Origin: null" (Referrer-Policy: no-referrer).
        paid = await checkout.client.post(
            path, data=form, headers={"Cookie": cookie, "Origin": "null"}
        )
        assert paid.status_code == 303


async def test_two_tabs_share_one_cookie(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        path, _ = await checkout.session_url()
        first = await checkout.render(path)
        second = await checkout.show(path, headers={"Cookie": f"checkout_csrf={first.nonce}"})
        assert f"checkout_csrf={first.nonce};" in second.headers["set-cookie"]
        assert f'value="{first.token}"' in second.text


async def test_a_double_submit_pays_once(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        await subscribe(checkout.gateway, checkout.owner.account_id, ["subscription.created"])
        path, customer_id = await checkout.session_url()
        page = await checkout.render(path)
        answers = await asyncio.gather(*(checkout.submit(path, page) for _ in range(3)))
        assert [answer.status_code for answer in answers] == [303] * 3
        assert {answer.headers["location"] for answer in answers} == {SUCCESS_URL}
        assert [event for _, event, _ in await emitted(checkout.gateway)] == [
            "subscription.created"
        ]
        later = await checkout.submit(path, page)
        assert (later.status_code, later.headers["location"]) == (303, SUCCESS_URL)
        assert await checkout.subscription(customer_id) is not None


async def test_a_customer_subscribed_by_another_session_cannot_pay_this_one(
    product_client: ProductClientFactory,
) -> None:
    async with open_checkout(product_client) as checkout:
        plan = await checkout.plan()
        token = (await checkout.customer())["token"]
        first, second = [
            checkout.path_of((await checkout.open_session(plan["id"], token))["checkout_url"])
            for _ in range(2)
        ]
        second_page = await checkout.render(second)
        assert (await checkout.submit(first, await checkout.render(first))).status_code == 303
        refused = await checkout.submit(second, second_page)
        assert refused.status_code == 409
        assert "<h1>Already subscribed</h1>" in refused.text
        assert f'href="{escape(CANCEL_URL)}"' in refused.text


async def test_an_expired_session_cannot_be_paid(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        path, customer_id = await checkout.session_url()
        page = await checkout.render(path)
        async with checkout.gateway.database.transaction() as session:
            await session.execute(update(CheckoutSession).values(expires_at=utcnow()))
        for answer in await checkout.assert_closed(path, page, 410, "Checkout expired"):
            assert f'href="{escape(CANCEL_URL)}"' in answer.text
        assert await checkout.subscription(customer_id) is None


async def test_a_withdrawn_plan_cannot_be_paid(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        path, _ = await checkout.session_url()
        page = await checkout.render(path)
        async with checkout.gateway.database.transaction() as session:
            await session.execute(update(Plan).values(is_active=False))
        await checkout.assert_closed(path, page, 410, "Checkout no longer available")


async def test_an_unknown_session_is_a_page(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        await checkout.session_url()
        for path in ("/checkout/" + "A" * 43, "/checkout/short", "/checkout/" + "a" * 44):
            await checkout.assert_closed(path, None, 404, "Checkout not found")


async def test_bodies_other_than_the_form_are_refused(
    product_client: ProductClientFactory,
) -> None:
    async with open_checkout(product_client) as checkout:
        path, _ = await checkout.session_url()
        page = await checkout.render(path)
        cookie = {"Cookie": f"checkout_csrf={page.nonce}"}
        as_json = await checkout.client.post(path, json={"csrf_token": page.token}, headers=cookie)
        assert as_json.status_code == 415
        huge = await checkout.submit(path, page, fields={"name": "a" * 5000})
        assert huge.status_code == 413
        for body in (b"name=%FF", b"a=1&" * 25, "name=é".encode()):
            answer = await checkout.client.post(
                path,
                content=body,
                headers={**cookie, "Content-Type": "application/x-www-form-urlencoded"},
            )
            assert answer.status_code == 400, body
            assert "<h1>Form not sent</h1>" in answer.text


async def test_visitors_are_limited_per_address(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client, products=FEW) as checkout:
        path, _ = await checkout.session_url()
        for _ in range(3):
            assert (await checkout.show(path)).status_code == 200
        refused = await checkout.show(path)
        assert refused.status_code == 429
        assert refused.json()["detail"].startswith("Too many checkout requests from your address")
        assert int(refused.headers["retry-after"]) >= 1
