"""What the installed plugins registered, and which plugin registered each item.

Every ``tollway_register_*`` hook receives a ``register`` callback bound to the calling
plugin, so a duplicate names both plugins and start-up fails before serving anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec
from sqlalchemy import MetaData

from tollway.reports import Report

ErrorStyle = Literal["detail", "error"]
"""``detail``: ``{"detail": "..."}`` (billing/POS, the default); ``error``: ``{"error": ...}``."""

_SCOPE_PATTERN = re.compile(r"^[a-z][a-z0-9_-]*(:[a-z0-9_*-]+)+$")
_EVENT_PATTERN = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")
_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]*$")
_HOST_PATTERN = re.compile(
    r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"
)
"""A host name as ``Host`` headers carry it: ASCII labels (IDNs in their ``xn--`` form)."""


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
    price_cents: int = 0
    """What the platform bills a tenant per ``interval`` (minor units of the
    ``billing_currency`` setting); 0 is free and needs no card."""
    interval: Literal["month", "year"] = "month"


@dataclass(frozen=True, slots=True)
class Scope:
    name: str
    description: str
    plugin: str
    grants: tuple[str, ...] = ()
    """The scopes a key holding this one is granted as well (a broad scope's)."""


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
    dependencies: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Litestar dependency providers of the product's handlers (its services)."""


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    function: Callable[..., Any]
    plugin: str


@dataclass(frozen=True, slots=True)
class SettingsType:
    """The msgspec Struct of a product's ``[products.<name>.settings]``."""

    product: str
    struct: type[msgspec.Struct]
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
    jobs: list[Job] = field(default_factory=list)
    settings: dict[str, SettingsType] = field(default_factory=dict)
    hosts: dict[str, str] = field(default_factory=dict)
    reports: dict[str, Report] = field(default_factory=dict)
    """By id, the reports products registered for the analytics product."""
    visitor_plans: dict[str, set[str]] = field(default_factory=dict)
    """By product, the plans routes give requests without a key (``Access(anonymous=
    ...)``): counted per client address, never an account's subscription."""
    """Host name (lower case) -> the prefix its requests are served under."""
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

    def add_scope(
        self, name: str, description: str, *, plugin: str, grants: Iterable[str] = ()
    ) -> None:
        if not _SCOPE_PATTERN.match(name):
            raise RegistrationError(f"plugin {plugin!r}: invalid scope name {name!r}")
        self._claim("scope", name, plugin)
        self.scopes[name] = Scope(name, description, plugin, tuple(dict.fromkeys(grants)))

    def check_scope_grants(self) -> None:
        """Fail unless every scope a scope grants is registered and grants nothing
        itself (one level: what a key may do stays readable from its scopes)."""
        for scope in self.scopes.values():
            for granted in scope.grants:
                target = self.scopes.get(granted)
                if target is None or granted == scope.name:
                    raise RegistrationError(
                        f"plugin {scope.plugin!r}: scope {scope.name!r} grants "
                        f"{granted!r}, which is not another registered scope"
                    )
                if target.grants:
                    raise RegistrationError(
                        f"plugin {scope.plugin!r}: scope {scope.name!r} grants {granted!r}, "
                        "which grants scopes itself"
                    )

    def granted_by(self) -> dict[str, frozenset[str]]:
        """Each scope some scope grants -> the scopes granting it."""
        granting: dict[str, set[str]] = {}
        for scope in self.scopes.values():
            for granted in scope.grants:
                granting.setdefault(granted, set()).add(scope.name)
        return {name: frozenset(names) for name, names in granting.items()}

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

    def add_routes(
        self,
        product: str,
        handlers: Sequence[Any],
        *,
        dependencies: Mapping[str, Callable[..., Any]] | None = None,
        plugin: str,
    ) -> None:
        """Add a product's handlers, checking each one's access declaration now: a
        keyed route declaring none, an unregistered scope or an inconsistent
        :class:`~tollway.Access` fails start-up naming the plugin and the route."""
        from tollway.admission.access import access_of  # access imports this module

        if product not in self.products:
            raise RegistrationError(f"plugin {plugin!r} registers routes for unknown {product!r}")
        descriptor = self.products[product]
        for path, opt, methods in _handler_options(handlers):
            where = f"plugin {plugin!r}, route {descriptor.prefix}{path} ({methods})"
            try:
                access = access_of(opt, descriptor)
            except ValueError as error:
                raise RegistrationError(f"{where}: {error}") from None
            if access is None:
                raise RegistrationError(
                    f"plugin {plugin!r}, route {descriptor.prefix}{path}: declare scope=..., "
                    "admin=True, public=True or access=Access(...)"
                )
            if access.scope is not None and access.scope not in self.scopes:
                raise RegistrationError(f"{where}: scope {access.scope!r} is not registered")
            if access.anonymous is not None:
                if access.anonymous not in self.plans[product]:
                    raise RegistrationError(
                        f"{where}: anonymous plan {access.anonymous!r} is unknown"
                    )
                self.visitor_plans.setdefault(product, set()).add(access.anonymous)
            if problems := access.problems(descriptor):
                raise RegistrationError(f"{where}: {'; '.join(problems)}")
        for name in dependencies or {}:
            self._claim("dependency", f"{product}.{name}", plugin)
        self.routes.append(RouteSet(product, tuple(handlers), plugin, dict(dependencies or {})))

    def add_job(self, name: str, function: Callable[..., Any], *, plugin: str) -> None:
        if not _EVENT_PATTERN.match(name) and not _NAME_PATTERN.match(name):
            raise RegistrationError(f"plugin {plugin!r}: invalid job name {name!r}")
        self._claim("job", name, plugin)
        self.jobs.append(Job(name, function, plugin))

    def add_report(self, report: Report, *, plugin: str) -> None:
        problem = report.check()
        if problem is not None:
            raise RegistrationError(f"plugin {plugin!r}: {problem}")
        if report.product not in self.products:
            raise RegistrationError(
                f"plugin {plugin!r} registers report {report.id!r} of unknown product "
                f"{report.product!r}"
            )
        self._claim("report", report.id, plugin)
        self.reports[report.id] = report

    def add_settings(self, product: str, struct: type[msgspec.Struct], *, plugin: str) -> None:
        if self.owners.get(f"product:{product}") != plugin:
            raise RegistrationError(
                f"plugin {plugin!r} registers settings for {product!r}, a product it does not own"
            )
        if not (isinstance(struct, type) and issubclass(struct, msgspec.Struct)):
            raise RegistrationError(f"plugin {plugin!r}: settings must be a msgspec.Struct type")
        if not struct.__struct_config__.forbid_unknown_fields:
            raise RegistrationError(
                f"plugin {plugin!r}: {struct.__name__} must set forbid_unknown_fields=True, "
                "so that a mistyped setting is an error rather than ignored"
            )
        self._claim("settings", product, plugin)
        self.settings[product] = SettingsType(product, struct, plugin)

    def add_host(self, host: str, prefix: str, *, plugin: str) -> None:
        name = host.lower().removesuffix(".")
        if not _HOST_PATTERN.match(name):
            raise RegistrationError(f"plugin {plugin!r}: invalid host {host!r} (a name, no port)")
        if not any(product.prefix == prefix for product in self.products.values()):
            raise RegistrationError(
                f"plugin {plugin!r}: host {name!r} is served under {prefix!r}, "
                "which is no product's prefix"
            )
        self._claim("host", name, plugin)
        self.hosts[name] = prefix

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


def _handler_options(
    handlers: Sequence[Any], inherited: Mapping[str, Any] | None = None, prefix: str = ""
) -> Iterator[tuple[str, Mapping[str, Any], str]]:
    """``(path, opt, methods)`` of every handler in ``handlers``, with the ``opt`` of
    the routers holding it merged in (a handler's own wins)."""
    from litestar import Router
    from litestar.handlers import HTTPRouteHandler

    for handler in handlers:
        if isinstance(handler, Router):
            merged = {**(inherited or {}), **handler.opt}
            for route in handler.routes:
                for inner in getattr(route, "route_handlers", ()):
                    if isinstance(inner, HTTPRouteHandler) and inner.http_methods == {"OPTIONS"}:
                        continue  # Litestar's own preflight answer
                    yield from _handler_options([inner], merged, prefix + handler.path.rstrip("/"))
            continue
        opt = {**(inherited or {}), **handler.opt}
        methods = "/".join(sorted(getattr(handler, "http_methods", None) or {"WEBSOCKET"}))
        for path in sorted(handler.paths):
            yield prefix + path, opt, methods
