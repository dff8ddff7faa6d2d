"""``tollway launchpad plans create``, run as operators run it, in real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tollway import Gateway, load_settings
from tollway_launchpad.queries import LaunchpadReads

PLAN = (*("--name", "Pro", "--slug", "pro", "--monthly-cents", "2900", "--annual-cents", "29000"),)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")
    }
    environment["TOLLWAY_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'launchpad.db'}"
    return environment


def tollway(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tollway.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def account(env: dict[str, str]) -> str:
    made = tollway(env, "accounts", "create", "acme", "--subscribe", "launchpad=pro")
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


async def test_plans_create_prints_the_plan(env: dict[str, str]) -> None:
    workspace = account(env)
    full = tollway(
        env,
        *("launchpad", "plans", "create", "--account", workspace, *PLAN),
        *("--trial-days", "14", "--feature", "SSO", "--feature", "Audit log"),
        *("--quota", "users=5", "--quota", "storage_gb=100", "--sort-order", "2"),
    )
    assert full.returncode == 0, full.stderr
    plan = json.loads(full.stdout)
    assert plan == {
        "id": plan["id"],
        "name": "Pro",
        "slug": "pro",
        "price_monthly_cents": 2900,
        "price_annual_cents": 29000,
        "trial_days": 14,
        "features": ["SSO", "Audit log"],
        "quota": {"users": 5, "storage_gb": 100},
        "is_active": True,
        "sort_order": 2,
    }
    plain = tollway(
        env,
        *("launchpad", "plans", "create", "--account", workspace),
        *("--name", "Legacy", "--slug", "legacy", "--monthly-cents", "0", "--annual-cents", "0"),
        "--inactive",
    )
    assert plain.returncode == 0, plain.stderr
    legacy = json.loads(plain.stdout)
    assert (legacy["trial_days"], legacy["features"], legacy["quota"]) == (0, [], {})
    assert (legacy["is_active"], legacy["sort_order"]) == (False, 0)

    gateway = Gateway(load_settings(environ={}, database_url=env["TOLLWAY_DATABASE_URL"]))
    try:
        stored = await LaunchpadReads(gateway.database.reads, int(workspace)).plans(
            include_inactive=True
        )
    finally:
        await gateway.database.dispose()
    assert [(each.id, each.slug) for each in stored] == [
        (legacy["id"], "legacy"),
        (plan["id"], "pro"),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--account", "999", *PLAN), "tollway: account 999 not found"),
        (("--account", "{account}", *PLAN, "--trial-days", "400"), "trial_days"),
        (("--account", "{account}", *PLAN, "--quota", "users"), "--quota 'users'"),
        (("--account", "{account}", *PLAN, "--quota", "users=many"), "NAME=INTEGER"),
        (("--account", "{account}", *PLAN, "--quota", "Users=5"), "quota"),
        (("--account", "{account}", *PLAN[:2], "--slug", "Pro!", *PLAN[4:]), "slug"),
        (("--account", "{account}", "--name", " ", *PLAN[2:]), "name must not be blank"),
        (("--account", "{account}", *PLAN[2:]), "--name"),
    ],
)
def test_plans_create_refusals(env: dict[str, str], args: tuple[str, ...], message: str) -> None:
    workspace = account(env)
    filled = [arg.replace("{account}", workspace) for arg in args]
    result = tollway(env, "launchpad", "plans", "create", *filled)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_taken_slug_is_refused(env: dict[str, str]) -> None:
    workspace = account(env)
    first = tollway(env, "launchpad", "plans", "create", "--account", workspace, *PLAN)
    assert first.returncode == 0, first.stderr
    again = tollway(env, "launchpad", "plans", "create", "--account", workspace, *PLAN)
    assert again.returncode == 2
    assert again.stderr == "tollway: A plan with slug 'pro' already exists\n"
