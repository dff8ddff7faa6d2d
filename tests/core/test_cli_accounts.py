"""``tollway accounts`` and ``tollway keys`` as scripts use them: listings, JSON,
subscription changes and the rules the developer API applies too."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from cli_runner import assert_one_line_error, clean_env, tollway
from widget_plugin import WidgetsPlugin

from tollway.accounts import AccountError
from tollway.testing import GatewayFactory, GatewayProcess, gateway_client


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(database_url=f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}")


def test_accounts_list_show_subscribe_and_unsubscribe(env: dict[str, str]) -> None:
    acme = tollway(env, "accounts", "create", "acme", "--subscribe", "code=pro").stdout.strip()
    globex = tollway(env, "accounts", "create", "globex").stdout.strip()
    tollway(env, "accounts", "subscribe", globex, "code=free")
    moved = tollway(env, "accounts", "subscribe", acme, "code=enterprise")  # replaces pro
    assert moved.stderr == f"subscribed account {acme} to code on plan enterprise\n"
    listing = tollway(env, "accounts", "list").stdout.splitlines()
    assert [line.split("\t")[:2] + line.split("\t")[3:] for line in listing] == [
        [acme, "acme", "code=enterprise"],
        [globex, "globex", "code=free"],
    ]
    tollway(env, "accounts", "unsubscribe", globex, "code")
    shown = tollway(env, "accounts", "show", globex).stdout.splitlines()
    assert shown[:2] == [f"id\t{globex}", "name\tglobex"]
    assert shown[3:] == ["subscription\tcode\tfree\tcanceled"]
    assert tollway(env, "accounts", "list").stdout.splitlines()[1].endswith("\t-")


def test_listings_as_json(env: dict[str, str]) -> None:
    account = tollway(env, "accounts", "create", "acme", "--subscribe", "code=pro").stdout.strip()
    key = tollway(env, "keys", "create", "--account", account, "--scope", "code:qr:generate")
    [listed] = json.loads(tollway(env, "accounts", "list", "--json").stdout)
    assert (listed["id"], listed["name"]) == (int(account), "acme")
    assert [(s["product"], s["plan"], s["status"]) for s in listed["subscriptions"]] == [
        ("code", "pro", "active")
    ]
    assert json.loads(tollway(env, "accounts", "show", account, "--json").stdout) == listed
    [described] = json.loads(tollway(env, "keys", "list", "--account", account, "--json").stdout)
    assert described["prefix"] == key.stdout[:11]
    assert described["scopes"] == ["code:qr:generate"]
    assert key.stdout.strip() not in json.dumps(described)
    products = json.loads(tollway(env, "plugins", "--json").stdout)
    [code] = [product for product in products if product["product"] == "code"]
    assert code["prefix"] == "/v1/code"
    assert "code:qr:generate" in [scope["name"] for scope in code["scopes"]]
    assert code["plans"] == ["free", "starter", "pro", "enterprise"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("accounts", "create", "acme"), "an account named 'acme' exists already (id 1)"),
        (("keys", "create", "--account", "1"), "a key that is not an admin key needs a scope"),
        (("keys", "list", "--account", "999"), "no account with id 999"),
        (("accounts", "show", "999"), "no account with id 999"),
        (("accounts", "subscribe", "999", "code=pro"), "no account with id 999"),
        (("accounts", "subscribe", "1", "code=platinum"), "has no plan 'platinum'"),
        (("accounts", "subscribe", "1", "nothing=free"), "unknown product 'nothing'"),
        (("accounts", "unsubscribe", "1", "chat"), "account 1 is not subscribed to 'chat'"),
    ],
    ids=[
        "duplicate-name",
        "no-scope",
        "keys-of-unknown-account",
        "show-unknown-account",
        "subscribe-unknown-account",
        "unknown-plan",
        "unknown-product",
        "not-subscribed",
    ],
)
def test_refusals(env: dict[str, str], args: tuple[str, ...], says: str) -> None:
    tollway(env, "accounts", "create", "acme", "--subscribe", "code=pro")
    assert says in assert_one_line_error(tollway(env, *args, check=False), 2)


def test_an_admin_key_needs_no_scope(env: dict[str, str]) -> None:
    account = tollway(env, "accounts", "create", "acme").stdout.strip()
    tollway(env, "keys", "create", "--account", account, "--admin")
    listing = tollway(env, "keys", "list", "--account", account).stdout
    assert "\tactive admin\t" in listing


async def test_a_plan_change_applies_at_once_in_the_process_that_made_it(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory(plugins=[], extra_plugins=[("widgets", WidgetsPlugin())])
    account = await gateway.accounts.create_account("acme", {"widgets": "tiny"})
    key = (await gateway.accounts.create_key(account, scopes=["widgets:read"])).key
    headers = {"Authorization": f"Bearer {key}"}
    async with gateway_client(gateway) as client:
        tiny = await client.get("/v1/widgets/widgets", headers=headers)
        await gateway.accounts.subscribe(account, "widgets", "big")
        big = await client.get("/v1/widgets/widgets", headers=headers)
        await gateway.accounts.unsubscribe(account, "widgets")
        cancelled = await client.get("/v1/widgets/widgets", headers=headers)
    assert tiny.json()["plan"] == "tiny"
    assert big.json()["plan"] == "big"
    assert cancelled.status_code == 403
    with pytest.raises(AccountError, match="not subscribed"):
        await gateway.accounts.unsubscribe(account, "widgets")


async def test_a_plan_changed_by_the_command_reaches_serving_processes(
    gateway_factory: GatewayFactory,
) -> None:
    # With key_cache_ttl = 0 the bound on other processes is zero: the next request.
    gateway = await gateway_factory(plugins=["code"])
    account = await gateway.accounts.create_account("acme", {"code": "free"})
    key = (await gateway.accounts.create_key(account, scopes=["code:usage:read"])).key
    url = gateway.settings.database_url
    env = clean_env(database_url=url)
    usage = {"headers": {"Authorization": f"Bearer {key}"}}
    with GatewayProcess(plugins=["code"], database_url=url, key_cache_ttl=0) as served:
        free = await asyncio.to_thread(httpx.get, f"{served.url}/v1/code/usage", **usage)
        await asyncio.to_thread(tollway, env, "accounts", "subscribe", str(account), "code=pro")
        pro = await asyncio.to_thread(httpx.get, f"{served.url}/v1/code/usage", **usage)
        await asyncio.to_thread(tollway, env, "accounts", "unsubscribe", str(account), "code")
        gone = await asyncio.to_thread(httpx.get, f"{served.url}/v1/code/usage", **usage)
    assert free.headers["x-ratelimit-limit"] == "100"
    assert pro.headers["x-ratelimit-limit"] == "10000"
    assert gone.status_code == 403
