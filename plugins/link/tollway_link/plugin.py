"""Registers the short links product: its descriptors, scopes, events, plans, tables,
settings, services, the API's and the redirect host's routes, the host serving
``short_link_base``, and its report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
from sqlalchemy import MetaData

from tollway import Gateway, Plan, Product, Report, RouteRegistrar, hookimpl
from tollway_link.addresses import Addresses
from tollway_link.analytics import ANALYTICS_DEPENDENCIES, ANALYTICS_ROUTES
from tollway_link.clicks import Clicks
from tollway_link.models import LinkBase
from tollway_link.product import EVENTS, PLANS, PRODUCT, REDIRECT_PLANS, REDIRECTS, SCOPES
from tollway_link.redirects import REDIRECT_ROUTES, Redirects
from tollway_link.reports import CLICKS
from tollway_link.routes import ROUTES, provide_link_reads, provide_links
from tollway_link.settings import LinkSettings
from tollway_link.targets import Targets


@hookimpl
def tollway_register_products(register: Callable[[Product], None]) -> None:
    register(PRODUCT)
    register(REDIRECTS)


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
    for plan in REDIRECT_PLANS:
        register(REDIRECTS.name, plan)


@hookimpl
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    register(LinkBase.metadata, Path(__file__).parent / "migrations")


@hookimpl
def tollway_register_settings(register: Callable[[str, type[msgspec.Struct]], None]) -> None:
    register(PRODUCT.name, LinkSettings)


@hookimpl
def tollway_register_services(register: Callable[[object], None], gateway: Gateway) -> None:
    register(Clicks(gateway))
    register(Addresses(gateway))
    register(Targets(gateway))
    register(Redirects(gateway))  # after the three it answers with


@hookimpl
def tollway_register_routes(register: RouteRegistrar) -> None:
    register(
        PRODUCT.name,
        [*ROUTES, *ANALYTICS_ROUTES],
        dependencies={
            "links": provide_links,
            "link_reads": provide_link_reads,
            "addresses": Addresses,
            "targets": Targets,
            **ANALYTICS_DEPENDENCIES,
        },
    )
    register(REDIRECTS.name, REDIRECT_ROUTES)


@hookimpl
def tollway_register_reports(register: Callable[[Report], None]) -> None:
    register(CLICKS)


@hookimpl
def tollway_register_hosts(register: Callable[[str, str], None], gateway: Gateway) -> None:
    host = gateway.service(Addresses).host
    if host is not None:
        register(host, REDIRECTS.prefix)


@hookimpl
def tollway_qr_content(content: str, origin: str, gateway: Gateway) -> str | None:
    return gateway.service(Addresses).scanned(content, origin)
