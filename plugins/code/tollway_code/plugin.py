"""Registers the code product: its descriptor, scopes, plans, table, QR content and
generation counter services, routes and usage report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import MetaData

from tollway import Gateway, Plan, Product, Report, RouteRegistrar, hookimpl
from tollway_code.content import QrContent
from tollway_code.counter import GenerationCounter
from tollway_code.models import CodeBase
from tollway_code.product import PLANS, PRODUCT, SCOPES
from tollway_code.reports import USAGE
from tollway_code.routes import ROUTES


@hookimpl
def tollway_register_products(register: Callable[[Product], None]) -> None:
    register(PRODUCT)


@hookimpl
def tollway_register_scopes(register: Callable[[str, str], None]) -> None:
    for name, description in SCOPES.items():
        register(name, description)


@hookimpl
def tollway_register_plans(register: Callable[[str, Plan], None]) -> None:
    for plan in PLANS:
        register(PRODUCT.name, plan)


@hookimpl
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    register(CodeBase.metadata, Path(__file__).parent / "migrations")


@hookimpl
def tollway_register_services(register: Callable[[object], None], gateway: Gateway) -> None:
    register(QrContent(gateway))
    register(GenerationCounter(gateway))


@hookimpl
def tollway_register_routes(register: RouteRegistrar) -> None:
    register(
        PRODUCT.name,
        ROUTES,
        dependencies={"qr_content": QrContent, "counter": GenerationCounter},
    )


@hookimpl
def tollway_register_reports(register: Callable[[Report], None]) -> None:
    register(USAGE)
