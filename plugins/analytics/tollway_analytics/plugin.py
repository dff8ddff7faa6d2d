"""Registers the analytics product: its descriptor, scopes, plans, table, settings,
service, job, routes and its own report (its exports)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
from sqlalchemy import MetaData

from tollway import Gateway, JobFunction, Plan, Product, Report, RouteRegistrar, hookimpl
from tollway_analytics.models import AnalyticsBase
from tollway_analytics.product import PLANS, PRODUCT, SCOPES
from tollway_analytics.reports import EXPORTS
from tollway_analytics.routes import ROUTES
from tollway_analytics.service import JOB, Analytics
from tollway_analytics.settings import AnalyticsSettings


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
    register(AnalyticsBase.metadata, Path(__file__).parent / "migrations")


@hookimpl
def tollway_register_settings(register: Callable[[str, type[msgspec.Struct]], None]) -> None:
    register(PRODUCT.name, AnalyticsSettings)


@hookimpl
def tollway_register_reports(register: Callable[[Report], None]) -> None:
    register(EXPORTS)


@hookimpl
def tollway_register_services(register: Callable[[object], None], gateway: Gateway) -> None:
    register(Analytics(gateway))


@hookimpl
def tollway_register_jobs(register: Callable[[str, JobFunction], None], gateway: Gateway) -> None:
    register(JOB, gateway.service(Analytics).make)


@hookimpl
def tollway_register_routes(register: RouteRegistrar) -> None:
    register(PRODUCT.name, ROUTES, dependencies={"analytics": Analytics})
