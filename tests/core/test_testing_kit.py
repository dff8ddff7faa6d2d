"""The testing kit a plugin author gets: ``product_client`` serves one product to an
account subscribed to it, and the package keeps every name tests import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from widget_plugin import WidgetsPlugin

import tollway.testing
from tollway.testing import ProductClient, ProductClientFactory, open_product_client

WIDGETS = {"plugins": [], "extra_plugins": [("widgets", WidgetsPlugin())]}
"""The in-test product alone: no installed plugin is loaded."""


async def test_the_owner_key_is_on_every_request_of_the_client(
    product_client: ProductClientFactory,
) -> None:
    async with product_client("widgets", **WIDGETS) as widgets:
        mine = await widgets.client.get("/v1/widgets/widgets")
        theirs = await widgets.client.get("/v1/widgets/widgets", headers=widgets.other.headers)
        nobody = await widgets.anonymous.get("/v1/widgets/widgets")
        public = await widgets.anonymous.get("/v1/widgets/open")
    assert mine.json() == {"account": widgets.owner.account_id, "plan": "big"}
    assert theirs.json()["account"] == widgets.other.account_id
    assert widgets.other.account_id != widgets.owner.account_id
    assert nobody.status_code == 401
    assert public.json() == {"public": True}


async def test_defaults_are_the_richest_plan_and_every_scope_of_the_plugin(
    product_client: ProductClientFactory,
) -> None:
    async with product_client("widgets", **WIDGETS) as widgets:
        created = await widgets.call("POST", "/widgets", json={"name": "cog"}, expect=201)
        admin = await widgets.client.get("/v1/widgets/admin")
    assert (widgets.plan, widgets.scopes) == ("big", ("widgets:read", "widgets:write"))
    assert widgets.product.prefix == "/v1/widgets"
    assert created == {"name": "cog", "size": 1}
    assert admin.status_code == 403


async def test_plan_scopes_and_admin_are_chosen_by_the_test(
    product_client: ProductClientFactory,
) -> None:
    chosen = {"plan": "tiny", "scopes": ["widgets:read"], "admin": True}
    async with product_client("widgets", **chosen, **WIDGETS) as widgets:
        listed = await widgets.call("GET", "/widgets")
        refused = await widgets.call("POST", "/widgets", json={"name": "cog"}, expect=403)
        admin = await widgets.call("GET", "/admin")
    assert listed["plan"] == "tiny"
    assert "widgets:write" in refused["detail"]
    assert admin == {"admin": True}


async def test_more_tenants_take_the_owners_plan_and_scopes_unless_told(
    product_client: ProductClientFactory,
) -> None:
    async with product_client("widgets", **WIDGETS) as widgets:
        alike = await widgets.tenant("initech")
        reader = await widgets.tenant("reader", plan="tiny", scopes=["widgets:read"])
        as_alike = await widgets.call("POST", "/widgets", json={"name": "a"}, by=alike, expect=201)
        as_reader = await widgets.call("GET", "/widgets", by=reader)
        await widgets.call("POST", "/widgets", json={"name": "b"}, by=reader, expect=403)
    assert as_alike["name"] == "a"
    assert as_reader == {"account": reader.account_id, "plan": "tiny"}


async def test_call_says_what_came_back_when_the_status_is_not_expected(
    product_client: ProductClientFactory,
) -> None:
    async with product_client("widgets", **WIDGETS) as widgets:
        with pytest.raises(AssertionError) as raised:
            await widgets.call("POST", "/widgets", json={"size": 2})
    said = str(raised.value)
    assert said.startswith("POST /v1/widgets/widgets: 400, not 200: ")
    assert "name" in said


async def test_only_the_named_plugin_is_loaded(product_client: ProductClientFactory) -> None:
    async with product_client("developer", admin=True) as developer:
        keys = await developer.call("GET", "/api-keys")
    assert set(developer.gateway.registry.products) == {"developer"}
    assert (developer.plan, developer.scopes) == ("standard", ("webhooks:manage",))
    assert [entry["id"] for entry in keys["data"]] == [developer.owner.key_id]


async def test_product_settings_go_over_the_config_and_keep_its_plans(
    product_client: ProductClientFactory,
) -> None:
    products = {
        "chat": {
            "settings": {"smtp_port": 2525, "smtp_host": "config.example"},
            "plans": {"business": {"requests_per_day": 7}},
        }
    }
    settings = {"smtp_host": "test.example"}
    async with product_client("chat", products=products, settings=settings) as chat:
        listed = await chat.client.get("/v1/chat/contacts")
    configured = chat.gateway.settings.product("chat")
    assert configured.settings == {"smtp_port": 2525, "smtp_host": "test.example"}
    assert listed.headers["x-ratelimit-limit"] == "7"
    assert products["chat"]["settings"]["smtp_host"] == "config.example"


async def test_a_product_the_gateway_does_not_serve_is_named(
    gateway_factory: tollway.testing.GatewayFactory,
) -> None:
    gateway = await gateway_factory(**WIDGETS)
    with pytest.raises(LookupError, match=r"product 'chat' is not served by this gateway \(widg"):
        async with open_product_client(gateway, "chat"):
            pass


async def test_open_product_client_serves_a_gateway_the_test_made(
    gateway_factory: tollway.testing.GatewayFactory,
) -> None:
    gateway = await gateway_factory(key_cache_ttl=0, **WIDGETS)
    async with open_product_client(gateway, "widgets", client_address="203.0.113.9") as widgets:
        assert isinstance(widgets, ProductClient)
        listed = await widgets.call("GET", "/widgets")
    assert widgets.gateway is gateway
    assert listed["account"] == widgets.owner.account_id


ROOT = Path(__file__).resolve().parents[2]
FIXTURES = {
    "backend",
    "gateway_factory",
    "product_client",
    "own_postgres",
    "own_redis",
    "webhook_certificate",
    "webhook_receiver",
}


def imported_from_the_kit() -> set[str]:
    """Every name the repository's Python (tests, plugins, bench...) imports from
    ``tollway.testing``."""
    names: set[str] = set()
    folders = ("core", "plugins", "tests", "harness", "bench")
    for path in (path for folder in folders for path in (ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "tollway.testing":
                names.update(alias.name for alias in node.names)
    return names


def test_the_package_exports_every_name_in_use_and_every_fixture() -> None:
    exported = set(tollway.testing.__all__)
    in_use = imported_from_the_kit()
    assert {"GatewayFactory", "gateway_client", "GatewayProcess"} <= in_use
    assert (in_use | FIXTURES) - exported == set()
    assert all(hasattr(tollway.testing, name) for name in exported)


def test_the_package_is_the_pytest_plugin_and_adds_the_product_settings_hook(
    pytestconfig: pytest.Config,
) -> None:
    manager = pytestconfig.pluginmanager
    assert manager.get_plugin("tollway") is tollway.testing
    assert hasattr(manager.hook, "pytest_tollway_product_settings")
