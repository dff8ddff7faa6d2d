"""Registers the point of sale product: its descriptor, scopes (with the developer
key-scope names granting them), events, plans, tables, settings, live-document service,
routes, commands and reports."""

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
    ScopeRegistrar,
    hookimpl,
)
from tollway_pos.commands import pos_commands
from tollway_pos.live import Live
from tollway_pos.models import PosBase
from tollway_pos.product import EVENTS, KEY_SCOPES, PLANS, PRODUCT, SCOPES
from tollway_pos.reports import SALES_SUMMARY
from tollway_pos.routes import DEPENDENCIES, ROUTES
from tollway_pos.settings import PosSettings
from tollway_pos.streams import STREAM_ROUTES


@hookimpl
def tollway_register_products(register: Callable[[Product], None]) -> None:
    register(PRODUCT)


@hookimpl
def tollway_register_scopes(register: ScopeRegistrar) -> None:
    for name, description in SCOPES.items():
        register(name, description)
    for name, (description, granted) in KEY_SCOPES.items():
        register(name, description, grants=granted)


@hookimpl
def tollway_register_events(register: Callable[[str, str], None]) -> None:
    for name, description in EVENTS.items():
        register(name, description)


@hookimpl
def tollway_register_plans(register: Callable[[str, Plan], None]) -> None:
    for plan in PLANS:
        register(PRODUCT.name, plan)


@hookimpl
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    register(PosBase.metadata, Path(__file__).parent / "migrations")


@hookimpl
def tollway_register_settings(register: Callable[[str, type[msgspec.Struct]], None]) -> None:
    register(PRODUCT.name, PosSettings)


@hookimpl
def tollway_register_services(register: Callable[[object], None], gateway: Gateway) -> None:
    register(Live(gateway))


@hookimpl
def tollway_register_routes(register: RouteRegistrar) -> None:
    register(PRODUCT.name, [*ROUTES, *STREAM_ROUTES], dependencies=DEPENDENCIES)


@hookimpl
def tollway_register_commands(register: CommandRegistrar) -> None:
    register(pos_commands)


@hookimpl
def tollway_register_reports(register: Callable[[Report], None]) -> None:
    register(SALES_SUMMARY)
