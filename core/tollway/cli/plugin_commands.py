"""Plugins' commands: each a click group named after a product the plugin registered
(``tollway chat ...``), with the deprecated top-level spellings a plugin keeps working."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial

import click
import pluggy

from tollway.plugins import call_each
from tollway.registry import RegistrationError, Registry

CORE = "tollway"
"""The owner of the core's own command names."""


@dataclass(frozen=True, slots=True)
class DeprecatedAlias:
    """``tollway <name> ...``, an old spelling of ``tollway <product> <subcommand> ...``."""

    name: str
    product: str
    subcommand: str

    def expand(self, args: list[str]) -> list[str]:
        """The new spelling of ``args``, which start with the alias's name."""
        return [self.product, self.subcommand, *args[1:]]

    @property
    def warning(self) -> str:
        return (
            f"warning: 'tollway {self.name}' is deprecated and will be removed; "
            f"use 'tollway {self.product} {self.subcommand}'"
        )


@dataclass
class PluginCommands:
    """The commands and deprecated aliases the loaded plugins registered, checked
    against the core's command names and the products each plugin owns."""

    product_owners: Mapping[str, str]
    """Product name -> the plugin that registered it."""
    commands: dict[str, click.Command] = field(default_factory=dict)
    aliases: dict[str, DeprecatedAlias] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)
    """Command or alias name -> registering plugin (``tollway`` for the core's)."""

    def _claim(self, name: str, plugin: str) -> None:
        owner = self.owners.get(name)
        if owner == CORE:
            raise RegistrationError(
                f"plugin {plugin!r} registers command {name!r}, the name of a core command"
            )
        if owner == plugin:
            raise RegistrationError(f"plugin {plugin!r} registers command {name!r} twice")
        if owner is not None:
            raise RegistrationError(
                f"command {name!r} is registered by both plugin {owner!r} and plugin {plugin!r}"
            )
        self.owners[name] = plugin

    def add(
        self,
        command: click.Command,
        *,
        deprecated_aliases: Mapping[str, str] | None = None,
        plugin: str,
    ) -> None:
        name = command.name or ""
        product_owner = self.product_owners.get(name)
        if product_owner is None:
            raise RegistrationError(
                f"plugin {plugin!r} registers command {name!r}, which names no product: "
                "a plugin's commands go in a group named after a product it registers"
            )
        if product_owner != plugin:
            raise RegistrationError(
                f"plugin {plugin!r} registers command {name!r}, but product {name!r} "
                f"is registered by plugin {product_owner!r}"
            )
        self._claim(name, plugin)
        self.commands[name] = command
        for alias, subcommand in (deprecated_aliases or {}).items():
            if not isinstance(command, click.Group) or subcommand not in command.commands:
                raise RegistrationError(
                    f"plugin {plugin!r}: deprecated alias {alias!r} stands for "
                    f"'tollway {name} {subcommand}', which is not a command"
                )
            self._claim(alias, plugin)
            self.aliases[alias] = DeprecatedAlias(alias, name, subcommand)


def collect_commands(manager: pluggy.PluginManager, core: Iterable[str]) -> PluginCommands:
    """Run ``tollway_register_commands`` for the plugins in ``manager``, after their
    products (whose names the commands take); ``core`` are the names taken already."""
    registry = Registry()
    call_each(
        manager.hook.tollway_register_products,
        lambda plugin: partial(registry.add_product, plugin=plugin),
    )
    product_owners = {name: registry.owners[f"product:{name}"] for name in registry.products}
    commands = PluginCommands(product_owners, owners=dict.fromkeys(core, CORE))
    call_each(
        manager.hook.tollway_register_commands, lambda plugin: partial(commands.add, plugin=plugin)
    )
    return commands
