"""Registers the developer product: its descriptor, scope, plan and routes."""

from __future__ import annotations

from collections.abc import Callable

from tollway import Plan, Product, RouteRegistrar, hookimpl
from tollway_developer.product import PLANS, PRODUCT, SCOPES
from tollway_developer.routes import ROUTES


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
def tollway_register_routes(register: RouteRegistrar) -> None:
    register(PRODUCT.name, ROUTES)
