"""Plugin loading and registration: duplicates and mistakes fail start-up clearly."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from litestar import get
from sqlalchemy import Column, Integer, MetaData, Table
from widget_plugin import WidgetsPlugin

from tollway import (
    Gateway,
    Plan,
    Product,
    RegistrationError,
    RouteRegistrar,
    hookimpl,
    load_settings,
)
from tollway.app import create_app
from tollway.plugins import installed_plugins


def gateway(*plugins: tuple[str, object], **settings: Any) -> Gateway:
    options = {"database_url": "sqlite+aiosqlite:///:memory:", **settings}
    return Gateway(load_settings(environ={}, plugins=[], **options), extra_plugins=plugins)


class ScopeThief:
    @hookimpl
    def tollway_register_scopes(self, register: Callable[[str, str], None]) -> None:
        register("widgets:read", "mine now")


class EventThief:
    @hookimpl
    def tollway_register_events(self, register: Callable[[str, str], None]) -> None:
        register("widgets.created", "mine now")


class PrefixThief:
    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(Product("other", "/v1/widgets"))


class TableThief:
    @hookimpl
    def tollway_register_models(self, register: Callable[[MetaData, Path | None], None]) -> None:
        metadata = MetaData()
        Table("api_keys", metadata, Column("id", Integer, primary_key=True))
        register(metadata, None)


@pytest.mark.parametrize(
    ("thief", "kind", "owner"),
    [
        (ScopeThief(), "scope 'widgets:read'", "widgets"),
        (EventThief(), "event 'widgets.created'", "widgets"),
        (PrefixThief(), "route prefix '/v1/widgets'", "widgets"),
        (TableThief(), "table 'api_keys'", "tollway.defaults.core"),
    ],
    ids=["scope", "event", "prefix", "table"],
)
def test_duplicates_fail_start_up_naming_both_plugins(thief: object, kind: str, owner: str) -> None:
    with pytest.raises(RegistrationError) as raised:
        gateway(("widgets", WidgetsPlugin()), ("thief", thief))
    message = str(raised.value)
    assert kind in message
    assert f"plugin {owner!r}" in message
    assert "plugin 'thief'" in message


class Unguarded(WidgetsPlugin):
    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        @get("/naked")
        async def naked() -> None: ...

        register(self.name, [naked])


class UnknownScope(WidgetsPlugin):
    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        @get("/typo", scope="widgets:raed")
        async def typo() -> None: ...

        register(self.name, [typo])


def test_a_keyed_route_without_access_declaration_fails_start_up() -> None:
    with pytest.raises(RegistrationError, match=r"route /v1/widgets/naked: declare scope"):
        create_app(gateway(("widgets", Unguarded())))


def test_a_route_with_an_unregistered_scope_fails_start_up() -> None:
    with pytest.raises(RegistrationError, match="'widgets:raed' is not registered"):
        create_app(gateway(("widgets", UnknownScope())))


def test_plans_for_unknown_products_are_refused() -> None:
    class Stray:
        @hookimpl
        def tollway_register_plans(self, register: Callable[[str, Plan], None]) -> None:
            register("nothing", Plan("free", 1))

    with pytest.raises(RegistrationError, match="unknown product 'nothing'"):
        gateway(("stray", Stray()))


def test_unknown_plugins_in_the_allow_list_are_refused() -> None:
    with pytest.raises(RegistrationError, match="unknown plugin"):
        Gateway(load_settings(environ={}, plugins=["no-such-product"]))


def test_the_allow_list_selects_installed_plugins() -> None:
    assert "code" in installed_plugins()
    everything = Gateway(load_settings(environ={}))
    nothing = Gateway(load_settings(environ={}, plugins=[]))
    assert "code" in everything.registry.products
    assert nothing.registry.products == {}


def test_config_can_add_and_override_plans(tmp_path: Path) -> None:
    config = tmp_path / "tollway.toml"
    config.write_text(
        "[products.widgets.plans.tiny]\nrequests_per_day = 5\n"
        '[products.widgets.plans.huge]\nrequests_per_day = 99\nfeatures = ["batch"]\n'
    )
    settings = load_settings(config, environ={}, plugins=[])
    configured = Gateway(settings, extra_plugins=[("widgets", WidgetsPlugin())])
    plans = configured.plans["widgets"]
    assert plans["tiny"].requests_per_day == 5
    assert plans["big"].requests_per_day == 1000
    assert plans["huge"].features == frozenset({"batch"})


def test_a_new_config_plan_must_say_its_limit(tmp_path: Path) -> None:
    config = tmp_path / "tollway.toml"
    config.write_text('[products.widgets.plans.odd]\nfeatures = ["x"]\n')
    with pytest.raises(RegistrationError, match="must set requests_per_day"):
        Gateway(
            load_settings(config, environ={}, plugins=[]),
            extra_plugins=[("widgets", WidgetsPlugin())],
        )


def test_settings_come_from_file_then_environment(tmp_path: Path) -> None:
    config = tmp_path / "tollway.toml"
    config.write_text('[gateway]\nredis_url = "redis://file"\nrate_limit_failure = "closed"\n')
    settings = load_settings(
        config, environ={"TOLLWAY_REDIS_URL": "redis://env", "TOLLWAY_PLUGINS": "a, b"}
    )
    assert settings.redis_url == "redis://env"
    assert settings.rate_limit_failure == "closed"
    assert settings.plugins == ["a", "b"]
    config.write_text('[gateway]\nrate_limit_failure = "sideways"\n')
    with pytest.raises(ValueError, match="rate_limit_failure"):
        load_settings(config, environ={})
