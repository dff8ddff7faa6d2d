"""The hosted checkout's API: a plan as a checkout screen shows it, and making sessions
(the customer's token, the return URLs, the plan, a customer already subscribed)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

import pytest
from checkout_client import CANCEL_URL, SUCCESS_URL, CheckoutClient, open_checkout
from sqlalchemy import select, update

from tollway import utcnow
from tollway.testing import ProductClientFactory, Tenant
from tollway_launchpad.models import CheckoutSession, Customer
from tollway_launchpad.product import PRODUCT


async def test_a_plan_as_a_checkout_screen_shows_it(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        plan = await checkout.plan(trial_days=14)
        assert await checkout.call("GET", f"/checkout/{plan['id']}") == {
            "plan": {"id": plan["id"], "name": "Pro", "slug": "pro"},
            "prices": {"month": 1900, "year": 19000},
            "currency": "usd",
            "trial_days": 14,
            "features": ["Unlimited projects", "Priority support"],
            "quota": {"users": 10, "storage_gb": 100},
        }


async def test_only_the_workspaces_active_plans_are_sold(
    product_client: ProductClientFactory,
) -> None:
    async with open_checkout(product_client) as checkout:
        retired = await checkout.plan(slug="retired", is_active=False)
        theirs = await checkout.plan(slug="theirs", by=checkout.other)
        token = (await checkout.customer())["token"]
        for plan_id in (retired["id"], theirs["id"], 999_999):
            answer = await checkout.call("GET", f"/checkout/{plan_id}", expect=404)
            assert answer == {"detail": f"Plan {plan_id} not found"}
            await checkout.open_session(plan_id, token, expect=404)
        await checkout.call("GET", "/checkout/0", expect=400)


async def test_a_session_is_a_page_of_the_gateway_valid_for_a_day(
    product_client: ProductClientFactory,
) -> None:
    async with open_checkout(product_client) as checkout:
        plan = await checkout.plan()
        registered = await checkout.customer()
        before = utcnow()
        created = await checkout.open_session(
            plan["id"], registered["token"], billing_interval="year"
        )
        assert set(created) == {"checkout_url", "expires_at"}
        session_id = checkout.session_id(created["checkout_url"])  # a page of the gateway
        expires_at = datetime.fromisoformat(created["expires_at"])
        day = timedelta(days=1)
        assert before + day <= expires_at <= utcnow() + day
        row = await _session(checkout, session_id)
        assert (row.account_id, row.customer_id, row.plan_id) == (
            checkout.owner.account_id,
            registered["customer"]["id"],
            plan["id"],
        )
        assert (row.billing_interval, row.amount_cents) == ("year", 19000)
        assert (row.success_url, row.cancel_url) == (SUCCESS_URL, CANCEL_URL)
        assert (row.completed_at, row.subscription_id) == (None, None)
        monthly = await checkout.open_session(plan["id"], registered["token"])
        monthly_row = await _session(checkout, checkout.session_id(monthly["checkout_url"]))
        assert (monthly_row.billing_interval, monthly_row.amount_cents) == ("month", 1900)


async def test_the_lifetime_is_the_operators(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client, settings={"checkout_session_ttl": 1800}) as checkout:
        plan = await checkout.plan()
        token = (await checkout.customer())["token"]
        before = utcnow()
        created = await checkout.open_session(plan["id"], token)
        half_hour = timedelta(seconds=1800)
        assert before + half_hour <= datetime.fromisoformat(created["expires_at"])
        assert datetime.fromisoformat(created["expires_at"]) <= utcnow() + half_hour


async def test_only_a_customer_token_of_the_workspace_makes_a_session(
    product_client: ProductClientFactory,
) -> None:
    async with open_checkout(product_client) as checkout:
        plan = await checkout.plan()
        theirs = (await checkout.customer(by=checkout.other))["token"]
        mine = await checkout.customer()
        tokens = await checkout.gateway.customer_tokens()
        customer_id = str(mine["customer"]["id"])
        account_id = checkout.owner.account_id
        refused = {
            "garbage": "not-a-token",
            "another workspace's": theirs,
            "the point of sale's": tokens.issue(
                account_id=account_id, product="pos", customer_id=customer_id
            ),
            "expired": tokens.issue(
                account_id=account_id, product=PRODUCT.name, customer_id=customer_id, ttl=-60
            ),
            "an unknown customer's": tokens.issue(
                account_id=account_id, product=PRODUCT.name, customer_id="999999"
            ),
            "not a customer id": tokens.issue(
                account_id=account_id, product=PRODUCT.name, customer_id="ada"
            ),
        }
        for why, token in refused.items():
            answer = await checkout.open_session(plan["id"], token, expect=401)
            assert answer["detail"].startswith("customer_token is not a valid token"), why
        async with checkout.gateway.database.transaction() as session:
            await session.execute(
                update(Customer).where(Customer.id == int(customer_id)).values(is_active=False)
            )
        await checkout.open_session(plan["id"], mine["token"], expect=401)


async def test_the_body_is_checked(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        plan = await checkout.plan()
        token = (await checkout.customer())["token"]
        path = f"/checkout/{plan['id']}/session"
        for body in (
            {"success_url": SUCCESS_URL, "cancel_url": CANCEL_URL},
            {"customer_token": token, "cancel_url": CANCEL_URL},
            {"customer_token": token, "success_url": SUCCESS_URL},
            {"customer_token": "", "success_url": SUCCESS_URL, "cancel_url": CANCEL_URL},
        ):
            await checkout.call("POST", path, json=body, expect=400)
        for interval in ("week", "monthly", None, 1):
            await checkout.open_session(plan["id"], token, billing_interval=interval, expect=400)
        await checkout.open_session(plan["id"], token, coupon="FREE", expect=400)


@pytest.mark.parametrize("field", ["success_url", "cancel_url"])
async def test_return_urls_are_absolute_web_urls(
    product_client: ProductClientFactory, field: str
) -> None:
    async with open_checkout(product_client) as checkout:
        plan = await checkout.plan()
        token = (await checkout.customer())["token"]
        for url in (
            "/welcome",
            "shop.example/welcome",
            "ftp://shop.example/",
            "javascript:alert(1)",
            "https://",
            "https://user:secret@shop.example/",
            "https://shop.example:port/",
            "https://shop example/",
            "https://shop.example/a b",
            "https://bücher.example/",
            "https://[::1]/welcome",
            "https://shop.example/\n",
            "https://shop.example/" + "a" * 2028,
        ):
            answer = await checkout.open_session(plan["id"], token, expect=400, **{field: url})
            assert answer["detail"].startswith("Invalid request body"), url
            assert field in answer["detail"], url
        for url in (
            "http://127.0.0.1:8080/done?session={id}",
            "https://shop.example/" + "a" * 2027,
            'https://shop.example/"quoted"',
        ):
            assert len(url) <= 2048
            await checkout.open_session(plan["id"], token, **{field: url})


async def test_a_subscribed_customer_changes_the_subscription_instead(
    product_client: ProductClientFactory,
) -> None:
    async with open_checkout(product_client) as checkout:
        plan = await checkout.plan()
        registered = await checkout.customer()
        created = await checkout.open_session(plan["id"], registered["token"])
        path = checkout.path_of(created["checkout_url"])
        assert (await checkout.submit(path, await checkout.render(path))).status_code == 303
        answer = await checkout.open_session(plan["id"], registered["token"], expect=409)
        assert answer == {
            "detail": f"Customer {registered['customer']['id']} already has a subscription "
            "(active); change or cancel it instead"
        }


async def test_sessions_need_the_checkout_scope(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        plan = await checkout.plan()
        token = (await checkout.customer())["token"]
        account_id = checkout.owner.account_id
        reading = await checkout.gateway.accounts.create_key(
            account_id, name="reader", scopes=["launchpad:plans:read"]
        )
        reader = Tenant(account_id, reading.id, reading.key)
        await checkout.call("GET", f"/checkout/{plan['id']}", by=reader)
        body = {"customer_token": token, "success_url": SUCCESS_URL, "cancel_url": CANCEL_URL}
        refused = await checkout.call(
            "POST", f"/checkout/{plan['id']}/session", json=body, expect=403, by=reader
        )
        assert "launchpad:checkout:write" in refused["detail"]


async def _session(checkout: CheckoutClient, session_id: str) -> CheckoutSession:
    digest = hashlib.sha256(session_id.encode()).hexdigest()
    async with checkout.gateway.database.transaction() as session:
        row = await session.get(CheckoutSession, digest)
        assert row is not None
        return row


async def test_an_idempotency_key_makes_one_session(product_client: ProductClientFactory) -> None:
    async with open_checkout(product_client) as checkout:
        plan = await checkout.plan()
        token = (await checkout.customer())["token"]
        body = {"customer_token": token, "success_url": SUCCESS_URL, "cancel_url": CANCEL_URL}
        path = f"{PRODUCT.prefix}/checkout/{plan['id']}/session"
        headers = {**checkout.owner.headers, "Idempotency-Key": "order-1042"}
        first, again = [
            await checkout.client.post(path, json=body, headers=headers) for _ in range(2)
        ]
        assert (first.status_code, again.status_code) == (200, 200)
        assert again.json() == first.json()
        assert again.headers["idempotent-replayed"] == "true"
        async with checkout.gateway.database.transaction() as session:
            assert len((await session.scalars(select(CheckoutSession))).all()) == 1
        other = await checkout.client.post(
            path, json={**body, "billing_interval": "year"}, headers=headers
        )
        assert other.status_code == 409
