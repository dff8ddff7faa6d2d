"""What the installed plugins registered, and which plugin registered each item.

Every ``tollway_register_*`` hook receives a ``register`` callback bound to the calling
plugin, so a duplicate names both plugins and start-up fails before serving anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import MetaData

ErrorStyle = Literal["detail", "error"]
"""``detail``: ``{"detail": "..."}`` (billing/POS, the default); ``error``: ``{"error": ...}``."""

_SCOPE_PATTERN = re.compile(r"^[a-z][a-z0-9_-]*(:[a-z0-9_*-]+)+$")
_EVENT_PATTERN = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")
_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]*$")


class RegistrationError(RuntimeError):
    """A plugin registered something invalid or something another plugin owns."""


@dataclass(frozen=True, slots=True)
class Product:
    """A product served by the gateway under ``prefix``."""

    name: str
    """Short key used in plans, subscriptions and scopes, e.g. ``code``."""
    prefix: str
    """Path prefix, e.g. ``/v1/code``."""
    title: str = ""
    error_style: ErrorStyle = "detail"
    keyed: bool = True
    """``False`` for keyless APIs (public QR): the gateway pipeline does not run; the
    product enforces its own limits."""
    contract: str | None = None
    """File name of the product's OpenAPI contract, shipped as package data in the
    registering plugin's ``<package>.contracts`` (see :mod:`tollway.openapi.contracts`)."""
    docs_url: str | None = None
    """Where clients read about the product; sent as ``docs`` in 400 bodies when set."""


@dataclass(frozen=True, slots=True)
class Plan:
    """A product plan: the daily request quota and what it unlocks."""

    name: str
    requests_per_day: int
    rank: int = 0
    """Orders plans from cheapest to richest ("Pro or higher" means rank >= pro's)."""
    features: frozenset[str] = frozenset()
    description: str = ""
    limits: Mapping[str, int] = field(default_factory=dict)
    """Named limits a product enforces itself (e.g. the public QR API's
    ``image_per_minute``); overridable one by one in the config file."""


@dataclass(frozen=True, slots=True)
class Scope:
    name: str
    description: str
    plugin: str


@dataclass(frozen=True, slots=True)
class Event:
    name: str
    description: str
    plugin: str


@dataclass(frozen=True, slots=True)
class Models:
    """A plugin's tables and the folder of its Alembic migration branch."""

    metadata: MetaData
    migrations: Path | None
    plugin: str


@dataclass(frozen=True, slots=True)
class RouteSet:
    product: str
    handlers: Sequence[Any]
    plugin: str


@dataclass
class Registry:
    """The union of everything the loaded plugins registered."""

    products: dict[str, Product] = field(default_factory=dict)
    scopes: dict[str, Scope] = field(default_factory=dict)
    events: dict[str, Event] = field(default_factory=dict)
    plans: dict[str, dict[str, Plan]] = field(default_factory=dict)
    models: list[Models] = field(default_factory=list)
    routes: list[RouteSet] = field(default_factory=list)
    owners: dict[str, str] = field(default_factory=dict)
    """``"product:code"`` / ``"table:accounts"`` / ... -> registering plugin."""

    def _claim(self, kind: str, name: str, plugin: str) -> None:
        key = f"{kind}:{name}"
        owner = self.owners.get(key)
        if owner is not None:
            raise RegistrationError(
                f"{kind} {name!r} is registered by both plugin {owner!r} and plugin {plugin!r}"
            )
        self.owners[key] = plugin

    def add_product(self, product: Product, *, plugin: str) -> None:
        if not _NAME_PATTERN.match(product.name):
            raise RegistrationError(f"plugin {plugin!r}: invalid product name {product.name!r}")
        if not product.prefix.startswith("/") or product.prefix.endswith("/"):
            raise RegistrationError(
                f"plugin {plugin!r}: prefix {product.prefix!r} must start and not end with '/'"
            )
        self._claim("product", product.name, plugin)
        self._claim("route prefix", product.prefix, plugin)
        self.products[product.name] = product
        self.plans.setdefault(product.name, {})

    def add_scope(self, name: str, description: str, *, plugin: str) -> None:
        if not _SCOPE_PATTERN.match(name):
            raise RegistrationError(f"plugin {plugin!r}: invalid scope name {name!r}")
        self._claim("scope", name, plugin)
        self.scopes[name] = Scope(name, description, plugin)

    def add_event(self, name: str, description: str, *, plugin: str) -> None:
        if not _EVENT_PATTERN.match(name):
            raise RegistrationError(f"plugin {plugin!r}: invalid event name {name!r}")
        self._claim("event", name, plugin)
        self.events[name] = Event(name, description, plugin)

    def add_plan(self, product: str, plan: Plan, *, plugin: str) -> None:
        if product not in self.products:
            raise RegistrationError(
                f"plugin {plugin!r} registers plan {plan.name!r} for unknown product {product!r}"
            )
        self._claim("plan", f"{product}.{plan.name}", plugin)
        self.plans[product][plan.name] = plan

    def add_models(self, metadata: MetaData, migrations: Path | None, *, plugin: str) -> None:
        for table in metadata.tables:
            self._claim("table", table, plugin)
        self.models.append(Models(metadata, migrations, plugin))

    def add_routes(self, product: str, handlers: Sequence[Any], *, plugin: str) -> None:
        if product not in self.products:
            raise RegistrationError(f"plugin {plugin!r} registers routes for unknown {product!r}")
        self.routes.append(RouteSet(product, tuple(handlers), plugin))

    def product_for_path(self, path: str) -> Product | None:
        """The product whose prefix is the longest one ``path`` starts with."""
        best: Product | None = None
        for product in self.products.values():
            prefix = product.prefix
            if (path == prefix or path.startswith(prefix + "/")) and (
                best is None or len(prefix) > len(best.prefix)
            ):
                best = product
        return best
