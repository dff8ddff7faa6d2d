"""Registers the background removal product: descriptor, scopes (and the single-image
scope covering the batch ones), plans, tables, settings, the service, the batch job,
routes, the ``tollway removebg`` commands, the usage report and the default
segmenter."""

from __future__ import annotations

from collections.abc import Callable, Generator
from functools import partial
from pathlib import Path

import msgspec
from sqlalchemy import MetaData

from tollway import (
    CommandRegistrar,
    Gateway,
    JobFunction,
    Plan,
    Product,
    Report,
    RouteRegistrar,
    ScopeChecker,
    Segmenter,
    hookimpl,
)
from tollway_removebg import batch, leases
from tollway_removebg.commands import removebg as removebg_commands
from tollway_removebg.models import RemoveBgBase
from tollway_removebg.product import PLANS, PRODUCT, SCOPES, ProcessCoversBatches
from tollway_removebg.reports import USAGE
from tollway_removebg.routes import ROUTES
from tollway_removebg.segmenter import RembgSegmenter
from tollway_removebg.service import RemoveBg
from tollway_removebg.settings import RemoveBgSettings


@hookimpl
def tollway_register_products(register: Callable[[Product], None]) -> None:
    register(PRODUCT)


@hookimpl
def tollway_register_scopes(register: Callable[[str, str], None]) -> None:
    for name, description in SCOPES.items():
        register(name, description)


@hookimpl(wrapper=True)
def tollway_scope_checker(
    gateway: Gateway,
) -> Generator[None, ScopeChecker | None, ScopeChecker | None]:
    """Whichever checker the deployment uses, ``removebg:images:process`` also grants
    the batch scopes."""
    checker = yield
    return None if checker is None else ProcessCoversBatches(checker)


@hookimpl
def tollway_register_plans(register: Callable[[str, Plan], None]) -> None:
    for plan in PLANS:
        register(PRODUCT.name, plan)


@hookimpl
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    register(RemoveBgBase.metadata, Path(__file__).parent / "migrations")


@hookimpl
def tollway_register_settings(register: Callable[[str, type[msgspec.Struct]], None]) -> None:
    register(PRODUCT.name, RemoveBgSettings)


@hookimpl
def tollway_register_services(register: Callable[[object], None], gateway: Gateway) -> None:
    register(RemoveBg(gateway))


@hookimpl
def tollway_register_jobs(register: Callable[[str, JobFunction], None], gateway: Gateway) -> None:
    register(leases.JOB, partial(batch.run, gateway.service(RemoveBg)))


@hookimpl
def tollway_register_routes(register: RouteRegistrar) -> None:
    register(PRODUCT.name, ROUTES, dependencies={"removebg": RemoveBg})


@hookimpl
def tollway_register_commands(register: CommandRegistrar) -> None:
    # ``tollway models fetch`` came before commands were grouped by product.
    register(removebg_commands, deprecated_aliases={"models": "models"})


@hookimpl
def tollway_register_reports(register: Callable[[Report], None]) -> None:
    register(USAGE)


@hookimpl(trylast=True)
def tollway_segmenter(gateway: Gateway) -> Segmenter:
    settings = gateway.product_settings(RemoveBgSettings)
    return RembgSegmenter(settings.model_file(), settings.model_name)
