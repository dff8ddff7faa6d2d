"""Subscriptions over HTTP: the status check (never 404 for a customer without one),
the signed-in customer's subscription, cancellation now or at the period's end, plan
and interval changes, their events, and isolation between workspaces. Subscriptions
are started through the billing engine, as a paid checkout starts them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from launchpad_client import DECLINING_CARD, LaunchpadClient, open_launchpad

from tollway.billing import Subscription
from tollway.testing import ProductClientFactory, emitted, subscribe
from tollway_launchpad.product import (
    INVOICE_PAID,
    SUBSCRIPTION_CANCELED,
    SUBSCRIPTION_CREATED,
    SUBSCRIPTION_UPDATED,
)

NOT_SUBSCRIBED: dict[str, Any] = {
    "active": False,
    "status": None,
    "subscription_id": None,
    "plan": None,
    "features": [],
    "quota": {},
    "renews_at": None,
    "billing_interval": None,
    "amount_cents": None,
    "current_period_end": None,
    "cancel_at_period_end": False,
    "pending_change": None,
}
BILLING_EVENTS = [SUBSCRIPTION_CREATED, SUBSCRIPTION_UPDATED, SUBSCRIPTION_CANCELED, INVOICE_PAID]


def at(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text is not None else None


def ref(plan: dict[str, Any]) -> dict[str, Any]:
    return {"id": plan["id"], "name": plan["name"], "slug": plan["slug"]}


async def subscribed(
    launchpad: LaunchpadClient, **plan: Any
) -> tuple[dict[str, Any], int, Subscription]:
    """A plan (of ``plan``'s fields), a customer, and the customer's subscription to it."""
    made = await launchpad.plan(**plan)
    customer_id = (await launchpad.register())["customer"]["id"]
    return made, customer_id, await launchpad.subscribe(customer_id, made["id"])


async def test_a_customer_without_a_subscription_is_not_active(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        customer_id = (await launchpad.register())["customer"]["id"]
        assert await launchpad.call("GET", f"/subscriptions/{customer_id}") == NOT_SUBSCRIBED


async def test_an_unknown_or_another_workspace_s_customer_is_not_found(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        theirs = (await launchpad.register(by=launchpad.other))["customer"]["id"]
        for customer_id in (theirs, 999_999):
            path = f"/subscriptions/{customer_id}"
            error = await launchpad.call("GET", path, expect=404)
            assert error == {"detail": f"Customer {customer_id} not found"}
            await launchpad.call("DELETE", path, expect=404)
            await launchpad.call("PATCH", path, json={"billing_interval": "year"}, expect=404)


async def test_an_active_subscription_s_status(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        plan, customer_id, started = await subscribed(launchpad)
        status = await launchpad.call("GET", f"/subscriptions/{customer_id}")
        assert status == {
            "active": True,
            "status": "active",
            "subscription_id": started.id,
            "plan": ref(plan),
            "features": plan["features"],
            "quota": plan["quota"],
            "renews_at": status["current_period_end"],
            "billing_interval": "month",
            "amount_cents": 2900,
            "current_period_end": status["current_period_end"],
            "cancel_at_period_end": False,
            "pending_change": None,
        }
        assert at(status["renews_at"]) == started.current_period_end
        # The other workspace cannot see it.
        await launchpad.call("GET", f"/subscriptions/{customer_id}", by=launchpad.other, expect=404)


async def test_a_trial_is_active_and_renews_when_it_ends(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        plan, customer_id, started = await subscribed(launchpad, trial_days=14)
        status = await launchpad.call("GET", f"/subscriptions/{customer_id}")
        assert (status["active"], status["status"]) == (True, "trialing")
        assert started.trial_end_at is not None
        assert at(status["renews_at"]) == started.trial_end_at
        assert status["plan"] == ref(plan)


async def test_the_status_shows_the_plan_s_features_and_quota_as_they_are_now(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        plan, customer_id, _ = await subscribed(launchpad)
        changes = {"features": ["SSO"], "quota": {"users": 50}, "price_monthly_cents": 9900}
        await launchpad.call("PATCH", f"/plans/{plan['id']}", json=changes)
        status = await launchpad.call("GET", f"/subscriptions/{customer_id}")
        assert (status["features"], status["quota"]) == (["SSO"], {"users": 50})
        assert status["amount_cents"] == 2900  # the price it was sold at


async def test_me_shows_the_signed_in_customer_s_subscription(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        plan = await launchpad.plan(name="Pro plan")
        registered = await launchpad.register()
        customer = registered["customer"]
        started = await launchpad.subscribe(customer["id"], plan["id"], interval="year")
        me = await launchpad.call(
            "GET", "/customers/me", headers={"X-Customer-Token": registered["token"]}
        )
        assert me == {
            "customer": {key: customer[key] for key in ("id", "email", "full_name")},
            "subscription": {
                "id": started.id,
                "status": "active",
                "billing_interval": "year",
                "amount_cents": 29000,
                "current_period_end": me["subscription"]["current_period_end"],
                "cancel_at_period_end": False,
                "plan_name": "Pro plan",
                "features": plan["features"],
                "quota": plan["quota"],
            },
        }
        assert at(me["subscription"]["current_period_end"]) == started.current_period_end


async def test_cancel_at_the_period_s_end(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        await subscribe(launchpad.gateway, launchpad.owner.account_id, BILLING_EVENTS)
        _, customer_id, started = await subscribed(launchpad)
        path = f"/subscriptions/{customer_id}"
        canceled = await launchpad.call("DELETE", path)  # no body: at the period's end
        period_end = canceled["current_period_end"]
        assert canceled == {
            "subscription_id": started.id,
            "status": "active",
            "cancel_at_period_end": True,
            "canceled_at": None,
            "current_period_end": period_end,
            "access_ends_at": period_end,
        }
        assert at(period_end) == started.current_period_end
        status = await launchpad.call("GET", path)
        assert (status["active"], status["cancel_at_period_end"]) == (True, True)
        assert (status["renews_at"], status["current_period_end"]) == (None, period_end)
        # Asking again changes nothing and tells nobody.
        assert await launchpad.call("DELETE", path, json={"immediately": False}) == canceled
        events = [event for _, event, _ in await emitted(launchpad.gateway)]
        assert events == [SUBSCRIPTION_CREATED, INVOICE_PAID, SUBSCRIPTION_UPDATED]


async def test_cancel_now(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        await subscribe(launchpad.gateway, launchpad.owner.account_id, BILLING_EVENTS)
        plan, customer_id, started = await subscribed(launchpad)
        path = f"/subscriptions/{customer_id}"
        canceled = await launchpad.call("DELETE", path, json={"immediately": True})
        assert canceled["subscription_id"] == started.id
        assert (canceled["status"], canceled["cancel_at_period_end"]) == ("canceled", False)
        assert canceled["canceled_at"] is not None
        assert canceled["access_ends_at"] == canceled["canceled_at"]
        assert await launchpad.call("GET", path) == NOT_SUBSCRIBED
        error = await launchpad.call("DELETE", path, expect=409)
        assert "no live subscription" in error["detail"]
        *_, (account, event, data) = await emitted(launchpad.gateway)
        assert (account, event) == (launchpad.owner.account_id, SUBSCRIPTION_CANCELED)
        assert data["subscription_id"] == started.id
        assert (data["plan"], data["status"]) == (plan["slug"], "canceled")


@pytest.mark.parametrize(
    ("body", "headers", "status"),
    [
        (b'{"immediately": "yes"}', {}, 400),
        (b'{"immediately": true, "refund": true}', {}, 400),
        (b"[]", {}, 400),
        (b"{", {}, 400),
        (b'{"immediately": "\xff"}', {}, 400),
        (b"[" * 1000 + b"]" * 1000, {}, 400),
        (b'{"immediately": true}', {"Content-Type": "text/plain"}, 415),
    ],
)
async def test_a_cancellation_body_outside_the_rules_is_refused(
    product_client: ProductClientFactory, body: bytes, headers: dict[str, str], status: int
) -> None:
    async with open_launchpad(product_client) as launchpad:
        _, customer_id, _ = await subscribed(launchpad)
        path = f"/subscriptions/{customer_id}"
        await launchpad.call("DELETE", path, content=body, headers=headers, expect=status)
        assert (await launchpad.call("GET", path))["cancel_at_period_end"] is False


async def test_cancelling_without_a_subscription_is_409(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        customer_id = (await launchpad.register())["customer"]["id"]
        await launchpad.call("DELETE", f"/subscriptions/{customer_id}", expect=409)
        error = await launchpad.call(
            "PATCH", f"/subscriptions/{customer_id}", json={"billing_interval": "year"}, expect=409
        )
        assert error == {"detail": f"Customer {customer_id} has no live subscription"}


async def test_an_upgrade_applies_now_and_charges_the_difference(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        await subscribe(launchpad.gateway, launchpad.owner.account_id, BILLING_EVENTS)
        _, customer_id, started = await subscribed(launchpad)
        business = await launchpad.plan(
            name="Business", slug="business", price_monthly_cents=9900, features=["SSO"]
        )
        changed = await launchpad.call(
            "PATCH", f"/subscriptions/{customer_id}", json={"plan_id": business["id"]}
        )
        assert changed["plan"] == ref(business)
        assert (changed["amount_cents"], changed["features"]) == (9900, ["SSO"])
        assert changed["subscription_id"] == started.id
        assert changed["pending_change"] is None
        events = [(event, data) for _, event, data in await emitted(launchpad.gateway)]
        assert [event for event, _ in events][-2:] == [SUBSCRIPTION_UPDATED, INVOICE_PAID]
        assert events[-2][1]["plan"] == "business"
        assert 0 < events[-1][1]["amount_cents"] <= 9900 - 2900


async def test_an_interval_change_or_a_downgrade_waits_for_the_period_s_end(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        plan, customer_id, started = await subscribed(launchpad)
        starter = await launchpad.plan(name="Starter", slug="starter", price_monthly_cents=900)
        path = f"/subscriptions/{customer_id}"
        yearly = await launchpad.call("PATCH", path, json={"billing_interval": "year"})
        assert (yearly["plan"], yearly["billing_interval"]) == (ref(plan), "month")
        assert yearly["pending_change"] == {
            "plan": ref(plan),
            "billing_interval": "year",
            "amount_cents": 29000,
            "effective_at": yearly["current_period_end"],
        }
        assert at(yearly["current_period_end"]) == started.current_period_end
        downgraded = await launchpad.call("PATCH", path, json={"plan_id": starter["id"]})
        assert downgraded["pending_change"]["plan"] == ref(starter)
        assert downgraded["pending_change"]["amount_cents"] == 900
        assert downgraded["amount_cents"] == 2900
        # Asking for the current terms again drops the pending change.
        kept = await launchpad.call(
            "PATCH", path, json={"plan_id": plan["id"], "billing_interval": "month"}
        )
        assert kept["pending_change"] is None
        assert await launchpad.call("GET", path) == kept


async def test_a_trial_changes_plan_at_once_without_a_charge(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        _, customer_id, _ = await subscribed(launchpad, trial_days=14)
        starter = await launchpad.plan(name="Starter", slug="starter", price_monthly_cents=900)
        changed = await launchpad.call(
            "PATCH", f"/subscriptions/{customer_id}", json={"plan_id": starter["id"]}
        )
        assert (changed["status"], changed["plan"]) == ("trialing", ref(starter))
        assert changed["amount_cents"] == 900


async def test_a_declined_upgrade_changes_nothing(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        free = await launchpad.plan(name="Free", slug="free", price_monthly_cents=0)
        pro = await launchpad.plan()
        customer_id = (await launchpad.register())["customer"]["id"]
        await launchpad.subscribe(customer_id, free["id"], card=DECLINING_CARD)
        path = f"/subscriptions/{customer_id}"
        before = await launchpad.call("GET", path)
        error = await launchpad.call("PATCH", path, json={"plan_id": pro["id"]}, expect=422)
        assert error == {"detail": "Your card was declined."}
        assert await launchpad.call("GET", path) == before


@pytest.mark.parametrize(
    ("body", "status", "why"),
    [
        ({}, 400, "give plan_id, billing_interval or both"),
        ({"plan_id": None}, 400, "plan_id"),
        ({"billing_interval": None}, 400, "billing_interval"),
        ({"billing_interval": "week"}, 400, "billing_interval"),
        ({"plan_id": 0}, 400, "plan_id"),
        ({"plan_id": "1"}, 400, "plan_id"),
        ({"plan_id": 999_999}, 422, "plan_id 999999 is not a plan of this workspace"),
    ],
)
async def test_a_change_outside_the_rules_is_refused(
    product_client: ProductClientFactory, body: dict[str, Any], status: int, why: str
) -> None:
    async with open_launchpad(product_client) as launchpad:
        _, customer_id, _ = await subscribed(launchpad)
        path = f"/subscriptions/{customer_id}"
        before = await launchpad.call("GET", path)
        error = await launchpad.call("PATCH", path, json=body, expect=status)
        assert why in error["detail"]
        assert await launchpad.call("GET", path) == before


async def test_a_change_to_a_plan_not_for_sale_is_422(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        plan, customer_id, _ = await subscribed(launchpad)
        path = f"/subscriptions/{customer_id}"
        retired = await launchpad.plan(slug="retired", is_active=False)
        theirs = await launchpad.plan(slug="theirs", by=launchpad.other)
        error = await launchpad.call("PATCH", path, json={"plan_id": retired["id"]}, expect=422)
        assert error == {"detail": f"plan_id {retired['id']} is not active: it is not for sale"}
        error = await launchpad.call("PATCH", path, json={"plan_id": theirs["id"]}, expect=422)
        assert error == {"detail": f"plan_id {theirs['id']} is not a plan of this workspace"}
        # A plan taken off sale still lets its subscribers change their interval.
        await launchpad.call("PATCH", f"/plans/{plan['id']}", json={"is_active": False})
        yearly = await launchpad.call("PATCH", path, json={"billing_interval": "year"})
        assert yearly["pending_change"]["billing_interval"] == "year"


async def test_a_past_due_subscription_still_gives_access_but_cannot_change(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        plan = await launchpad.plan(trial_days=7)
        customer_id = (await launchpad.register())["customer"]["id"]
        started = await launchpad.subscribe(customer_id, plan["id"], card=DECLINING_CARD)
        assert started.trial_end_at is not None
        report = await launchpad.gateway.billing.run_due(started.trial_end_at)
        assert report.failed == 1
        path = f"/subscriptions/{customer_id}"
        status = await launchpad.call("GET", path)
        assert (status["active"], status["status"], status["plan"]) == (True, "past_due", ref(plan))
        error = await launchpad.call("PATCH", path, json={"billing_interval": "year"}, expect=409)
        assert "past due" in error["detail"]
        canceled = await launchpad.call("DELETE", path, json={"immediately": True})
        assert canceled["status"] == "canceled"
        assert await launchpad.call("GET", path) == NOT_SUBSCRIBED
