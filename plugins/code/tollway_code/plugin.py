"""Registers the code product: its descriptor, scopes, plans, QR content service and
routes."""

from __future__ import annotations

from collections.abc import Callable

from tollway import Gateway, Plan, Product, RouteRegistrar, hookimpl
from tollway_code.content import QrContent
from tollway_code.product import PLANS, PRODUCT, SCOPES
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
def tollway_register_services(register: Callable[[object], None], gateway: Gateway) -> None:
    register(QrContent(gateway))


@hookimpl
def tollway_register_routes(register: RouteRegistrar) -> None:
    register(PRODUCT.name, ROUTES, dependencies={"qr_content": QrContent})
