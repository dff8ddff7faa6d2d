"""Registers the account and billing product: its descriptors (the API, the "save a
card" page, the invoice PDFs), scopes, plans, tables, settings and routes. Its ledger
is the core's (the platform's own billing, which the pipeline admits by)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
from sqlalchemy import MetaData

from tollway import Gateway, Plan, Product, RouteRegistrar, hookimpl
from tollway_account.card_page import (
    CARD_PAGE_DEPENDENCIES,
    CARD_PAGE_ROUTES,
    CARD_PAGE_SERVICES,
)
from tollway_account.invoice_pdfs import PDF_DEPENDENCIES, PDF_ROUTES, InvoicePdfs
from tollway_account.models import AccountBase
from tollway_account.product import (
    CARDS,
    CARDS_PLANS,
    INVOICES,
    INVOICES_PLANS,
    PLANS,
    PRODUCT,
    SCOPES,
)
from tollway_account.routes import DEPENDENCIES, ROUTES
from tollway_account.settings import AccountSettings


@hookimpl
def tollway_register_products(register: Callable[[Product], None]) -> None:
    for product in (PRODUCT, CARDS, INVOICES):
        register(product)


@hookimpl
def tollway_register_scopes(register: Callable[[str, str], None]) -> None:
    for name, description in SCOPES.items():
        register(name, description)


@hookimpl
def tollway_register_plans(register: Callable[[str, Plan], None]) -> None:
    for product, plans in ((PRODUCT, PLANS), (CARDS, CARDS_PLANS), (INVOICES, INVOICES_PLANS)):
        for plan in plans:
            register(product.name, plan)


@hookimpl
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    register(AccountBase.metadata, Path(__file__).parent / "migrations")


@hookimpl
def tollway_register_settings(register: Callable[[str, type[msgspec.Struct]], None]) -> None:
    register(PRODUCT.name, AccountSettings)


@hookimpl
def tollway_register_services(register: Callable[[object], None], gateway: Gateway) -> None:
    for service in (*CARD_PAGE_SERVICES, InvoicePdfs):
        register(service(gateway))


@hookimpl
def tollway_register_routes(register: RouteRegistrar) -> None:
    register(PRODUCT.name, ROUTES, dependencies=DEPENDENCIES)
    register(CARDS.name, CARD_PAGE_ROUTES, dependencies=CARD_PAGE_DEPENDENCIES)
    register(INVOICES.name, PDF_ROUTES, dependencies=PDF_DEPENDENCIES)
