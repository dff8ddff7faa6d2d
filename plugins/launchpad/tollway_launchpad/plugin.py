"""Registers the subscription billing product: its descriptors, scopes, events, plans,
tables, settings, its ledger on the billing engine, the routes of the API and of the
hosted checkout page, its operator commands and its report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
from sqlalchemy import MetaData

from tollway import (
    CommandRegistrar,
    Gateway,
    Plan,
    Product,
    Report,
    RouteRegistrar,
    hookimpl,
)
from tollway.billing import Ledger
from tollway_launchpad.checkout import (
    CHECKOUT_DEPENDENCIES,
    CHECKOUT_ROUTES,
    CHECKOUT_SERVICES,
    PAGE_DEPENDENCIES,
    PAGE_ROUTES,
)
from tollway_launchpad.commands import launchpad as launchpad_commands
from tollway_launchpad.models import LaunchpadBase
from tollway_launchpad.product import (
    CHECKOUT,
    CHECKOUT_PLANS,
    EVENTS,
    LEDGER,
    PLANS,
    PRODUCT,
    SCOPES,
)
from tollway_launchpad.reports import SUBSCRIPTIONS
from tollway_launchpad.routes import DEPENDENCIES, ROUTES
from tollway_launchpad.settings import LaunchpadSettings


@hookimpl
def tollway_register_products(register: Callable[[Product], None]) -> None:
    register(PRODUCT)
    register(CHECKOUT)


@hookimpl
def tollway_register_scopes(register: Callable[[str, str], None]) -> None:
    for name, description in SCOPES.items():
        register(name, description)


@hookimpl
def tollway_register_events(register: Callable[[str, str], None]) -> None:
    for name, description in EVENTS.items():
        register(name, description)


@hookimpl
def tollway_register_plans(register: Callable[[str, Plan], None]) -> None:
    for plan in PLANS:
        register(PRODUCT.name, plan)
    for plan in CHECKOUT_PLANS:
        register(CHECKOUT.name, plan)


@hookimpl
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    register(LaunchpadBase.metadata, Path(__file__).parent / "migrations")


@hookimpl
def tollway_register_settings(register: Callable[[str, type[msgspec.Struct]], None]) -> None:
    register(PRODUCT.name, LaunchpadSettings)


@hookimpl
def tollway_register_services(register: Callable[[object], None], gateway: Gateway) -> None:
    settings = gateway.product_settings(LaunchpadSettings)
    gateway.billing.add_ledger(
        Ledger(
            name=LEDGER,
            currency=settings.currency,
            retry_days=tuple(settings.dunning_retry_days),
        )
    )
    for service in CHECKOUT_SERVICES:
        register(service(gateway))


@hookimpl
def tollway_register_routes(register: RouteRegistrar) -> None:
    register(
        PRODUCT.name,
        [*ROUTES, *CHECKOUT_ROUTES],
        dependencies={**DEPENDENCIES, **CHECKOUT_DEPENDENCIES},
    )
    register(CHECKOUT.name, PAGE_ROUTES, dependencies=PAGE_DEPENDENCIES)


@hookimpl
def tollway_register_commands(register: CommandRegistrar) -> None:
    register(launchpad_commands)


@hookimpl
def tollway_register_reports(register: Callable[[Report], None]) -> None:
    register(SUBSCRIPTIONS)
