"""Plans over HTTP: creation and its rules, reading, the listing's order and filter,
changes, slugs unique per workspace, and isolation between workspaces."""

from __future__ import annotations

from typing import Any

import pytest
from launchpad_client import PRO, open_launchpad

from tollway.testing import ProductClientFactory


async def test_a_plan_with_every_field(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        created = await launchpad.plan(
            name="  Pro  ",
            trial_days=14,
            features=["Unlimited projects", " SSO ", "Unlimited projects"],
            quota={"users": 10, "storage_gb": 0},
            is_active=False,
            sort_order=-3,
        )
        assert created == {
            "id": created["id"],
            "name": "Pro",
            "slug": "pro",
            "price_monthly_cents": 2900,
            "price_annual_cents": 29000,
            "trial_days": 14,
            "features": ["Unlimited projects", "SSO"],
            "quota": {"users": 10, "storage_gb": 0},
            "is_active": False,
            "sort_order": -3,
        }
        assert await launchpad.call("GET", f"/plans/{created['id']}") == created


async def test_a_plan_s_defaults(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        body = {"name": "Free", "slug": "free", "price_monthly_cents": 0, "price_annual_cents": 0}
        created = await launchpad.call("POST", "/plans", json=body, expect=201)
        assert created == {
            **body,
            "id": created["id"],
            "trial_days": 0,
            "features": [],
            "quota": {},
            "is_active": True,
            "sort_order": 0,
        }


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"name": ""}, "name"),
        ({"name": "   "}, "name must not be blank"),
        ({"name": "Pro\tplan"}, "name"),
        ({"slug": "Pro"}, "slug"),
        ({"slug": "pro plan"}, "slug"),
        ({"slug": "pro--plan"}, "slug"),
        ({"slug": "-pro"}, "slug"),
        ({"slug": "a" * 101}, "slug"),
        ({"price_monthly_cents": -1}, "price_monthly_cents"),
        ({"price_annual_cents": -1}, "price_annual_cents"),
        ({"price_monthly_cents": 2**31}, "price_monthly_cents"),
        ({"price_monthly_cents": "2900"}, "price_monthly_cents"),
        ({"price_monthly_cents": 29.5}, "price_monthly_cents"),
        ({"trial_days": -1}, "trial_days"),
        ({"trial_days": 366}, "trial_days"),
        ({"features": "SSO"}, "features"),
        ({"features": [1]}, "features"),
        ({"features": [""]}, "features"),
        ({"features": ["  "]}, "features[] must not be blank"),
        ({"quota": {"users": "5"}}, "quota"),
        ({"quota": {"users": 1.5}}, "quota"),
        ({"quota": {"users": -1}}, "quota"),
        ({"quota": {"Users": 5}}, "quota"),
        ({"quota": [5]}, "quota"),
        ({"is_active": "yes"}, "is_active"),
        ({"sort_order": 2**31}, "sort_order"),
        ({"id": 7}, "unknown field `id`"),
    ],
)
async def test_a_plan_outside_the_rules_is_400(
    product_client: ProductClientFactory, change: dict[str, Any], why: str
) -> None:
    async with open_launchpad(product_client) as launchpad:
        error = await launchpad.call("POST", "/plans", json={**PRO, **change}, expect=400)
        assert error["detail"].startswith("Invalid request body")
        assert why in error["detail"]
        existing = await launchpad.plan(slug="existing")
        path = f"/plans/{existing['id']}"
        error = await launchpad.call("PATCH", path, json=change, expect=400)
        assert why in error["detail"]
        assert await launchpad.call("GET", path) == existing
        assert [plan["slug"] for plan in (await launchpad.call("GET", "/plans"))["plans"]] == [
            "existing"
        ]


@pytest.mark.parametrize("missing", ["name", "slug", "price_monthly_cents", "price_annual_cents"])
async def test_a_plan_needs_its_name_slug_and_prices(
    product_client: ProductClientFactory, missing: str
) -> None:
    async with open_launchpad(product_client) as launchpad:
        body = {key: value for key, value in PRO.items() if key != missing}
        error = await launchpad.call("POST", "/plans", json=body, expect=400)
        assert f"missing required field `{missing}`" in error["detail"]


async def test_a_slug_is_unique_within_a_workspace(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        pro = await launchpad.plan()
        error = await launchpad.call("POST", "/plans", json={**PRO, "name": "Pro 2"}, expect=409)
        assert error == {"detail": "A plan with slug 'pro' already exists"}
        team = await launchpad.plan(slug="team", name="Team")
        error = await launchpad.call(
            "PATCH", f"/plans/{team['id']}", json={"slug": "pro"}, expect=409
        )
        assert error == {"detail": "A plan with slug 'pro' already exists"}
        assert (await launchpad.call("GET", f"/plans/{team['id']}"))["slug"] == "team"
        # Another workspace has its own slugs.
        theirs = await launchpad.plan(by=launchpad.other)
        assert theirs["slug"] == "pro"
        assert theirs["id"] != pro["id"]


async def test_listing_orders_by_sort_order_then_id(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        business = await launchpad.plan(slug="business", sort_order=2)
        starter = await launchpad.plan(slug="starter", sort_order=1)
        free = await launchpad.plan(slug="free", sort_order=0)
        team = await launchpad.plan(slug="team", sort_order=1)
        retired = await launchpad.plan(slug="retired", sort_order=0, is_active=False)
        listed = await launchpad.call("GET", "/plans")
        assert listed == {"plans": [free, starter, team, business]}
        everything = await launchpad.call("GET", "/plans", params={"include_inactive": "true"})
        assert everything == {"plans": [free, retired, starter, team, business]}
        only_active = await launchpad.call("GET", "/plans", params={"include_inactive": "false"})
        assert only_active == listed
        error = await launchpad.call(
            "GET", "/plans", params={"include_inactive": "maybe"}, expect=400
        )
        assert "include_inactive" in error["detail"]


async def test_changing_a_plan_changes_only_the_fields_given(
    product_client: ProductClientFactory,
) -> None:
    async with open_launchpad(product_client) as launchpad:
        plan = await launchpad.plan(trial_days=7)
        path = f"/plans/{plan['id']}"
        assert await launchpad.call("PATCH", path, json={}) == plan
        changed = await launchpad.call(
            "PATCH",
            path,
            json={"price_monthly_cents": 3900, "quota": {"users": 20}, "is_active": False},
        )
        assert changed == {
            **plan,
            "price_monthly_cents": 3900,
            "quota": {"users": 20},
            "is_active": False,
        }
        renamed = await launchpad.call(
            "PATCH", path, json={"name": " Pro+ ", "slug": "pro-plus", "features": []}
        )
        assert renamed == {**changed, "name": "Pro+", "slug": "pro-plus", "features": []}
        assert await launchpad.call("GET", path) == renamed


async def test_another_workspace_s_plan_is_not_found(product_client: ProductClientFactory) -> None:
    async with open_launchpad(product_client) as launchpad:
        theirs = await launchpad.plan(by=launchpad.other)
        path = f"/plans/{theirs['id']}"
        error = await launchpad.call("GET", path, expect=404)
        assert error == {"detail": f"Plan {theirs['id']} not found"}
        await launchpad.call("PATCH", path, json={"name": "Mine"}, expect=404)
        assert await launchpad.call("GET", "/plans") == {"plans": []}
        assert await launchpad.call("GET", path, by=launchpad.other) == theirs
        await launchpad.call("GET", "/plans/999999", expect=404)


@pytest.mark.parametrize(
    ("plan_id", "status", "why"),
    [
        ("0", 400, "plan_id: Expected `int` >= 1"),
        ("-1", 400, "plan_id: Expected `int` >= 1"),
        ("2147483648", 400, "plan_id: Expected `int` <= 2147483647"),
        ("abc", 404, "Not Found"),
    ],
)
async def test_a_plan_id_out_of_range_is_refused(
    product_client: ProductClientFactory, plan_id: str, status: int, why: str
) -> None:
    async with open_launchpad(product_client) as launchpad:
        for method, body in (("GET", None), ("PATCH", {"name": "Pro"})):
            error = await launchpad.call(method, f"/plans/{plan_id}", json=body, expect=status)
            assert why in error["detail"]
