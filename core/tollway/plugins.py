"""Finding and loading plugins, and collecting what they register.

Installed plugins announce themselves in the ``tollway.plugins`` entry point group;
a deployment may narrow them with an allow-list (``--plugins`` / ``TOLLWAY_PLUGINS``).
The core's defaults are registered first, like any plugin, and marked ``trylast``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

import pluggy

from tollway import hookspecs
from tollway.registry import Models, RegistrationError, Registry

ENTRY_POINT_GROUP = "tollway.plugins"

DEFAULT_PLUGINS = (
    "tollway.defaults.core",
    "tollway.defaults.keys",
    "tollway.defaults.scopes",
    "tollway.defaults.ratelimit",
    "tollway.defaults.webhooks",
    "tollway.defaults.errors",
    "tollway.defaults.jobs",
    "tollway.defaults.geoip",
    "tollway.defaults.payments",
    "tollway.defaults.billing",
)


def installed_plugins() -> dict[str, Any]:
    """Entry point name -> entry point, for every installed product plugin."""
    return {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP)}


def plugin_manager(
    allow: Sequence[str] | None = None, extra: Iterable[tuple[str, object]] = ()
) -> pluggy.PluginManager:
    """A plugin manager holding the core defaults, the allowed installed plugins and
    ``extra`` ``(name, plugin)`` pairs (for plugins that are not installed)."""
    manager = pluggy.PluginManager("tollway")
    manager.add_hookspecs(hookspecs)
    for module in DEFAULT_PLUGINS:
        manager.register(importlib.import_module(module), name=module)
    available = installed_plugins()
    if allow is not None:
        unknown = sorted(set(allow) - set(available) - {name for name, _ in extra})
        if unknown:
            raise RegistrationError(
                f"unknown plugin(s) {', '.join(unknown)}; installed: "
                f"{', '.join(sorted(available)) or 'none'}"
            )
    for name, point in sorted(available.items()):
        if allow is None or name in allow:
            manager.register(point.load(), name=name)
    for name, plugin in extra:
        manager.register(plugin, name=name)
    manager.hook.tollway_add_hookspecs.call_historic(kwargs={"register": _hookspec_adder(manager)})
    manager.check_pending()
    return manager


def _hookspec_adder(manager: pluggy.PluginManager) -> Callable[..., None]:
    """The ``register`` of ``tollway_add_hookspecs``: adds a module's hook specs (a
    hook another module defines fails) and registers its default implementations."""
    owners: dict[str, str] = {}

    def add(specs: ModuleType, *defaults: object) -> None:
        names = [name for name in vars(specs) if name.startswith("tollway_")]
        if not any(owners.get(name) == specs.__name__ for name in names):
            for name in names:
                if (owner := owners.get(name)) is not None or getattr(
                    getattr(manager.hook, name, None), "spec", None
                ):
                    raise RegistrationError(
                        f"hook {name!r} is defined by both {owner or 'tollway'!r} and "
                        f"{specs.__name__!r}"
                    )
                owners[name] = specs.__name__
            manager.add_hookspecs(specs)
        for default in defaults:
            if not manager.is_registered(default):
                manager.register(default, name=getattr(default, "__name__", None))

    return add


def call_each(
    hook: pluggy.HookCaller, make_register: Callable[[str], Callable[..., None]], **kwargs: Any
) -> None:
    """Call every implementation of a registration hook with a ``register`` callback
    bound to the implementing plugin, so the registry knows who registered what."""
    for impl in reversed(hook.get_hookimpls()):
        arguments = {"register": make_register(impl.plugin_name), **kwargs}
        impl.function(*(arguments[name] for name in impl.argnames))


def _bind(method: Callable[..., None]) -> Callable[[str], Callable[..., None]]:
    return lambda plugin: lambda *args, **kwargs: method(*args, plugin=plugin, **kwargs)


def collect_models(manager: pluggy.PluginManager) -> list[Models]:
    """Only the models the plugins register (what a migration needs): plugins that are
    never served together may each register an event or scope of the same name."""
    registry = Registry()
    call_each(manager.hook.tollway_register_models, _bind(registry.add_models))
    return registry.models


def collect(manager: pluggy.PluginManager) -> Registry:
    """Run the registration hooks (routes excepted) into a fresh registry."""
    registry = Registry()
    hook = manager.hook
    call_each(hook.tollway_register_products, _bind(registry.add_product))
    call_each(hook.tollway_register_scopes, _bind(registry.add_scope))
    call_each(hook.tollway_register_events, _bind(registry.add_event))
    call_each(hook.tollway_register_models, _bind(registry.add_models))
    call_each(hook.tollway_register_plans, _bind(registry.add_plan))
    call_each(hook.tollway_register_settings, _bind(registry.add_settings))
    call_each(hook.tollway_register_reports, _bind(registry.add_report))
    registry.check_scope_grants()
    return registry
