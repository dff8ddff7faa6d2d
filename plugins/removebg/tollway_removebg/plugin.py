"""Registers the background removal product: descriptor, scopes (and the single-image
scope covering the batch ones), plans, tables, routes, the batch job, the ``tollway
models`` command and the default segmenter."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Generator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import MetaData

from tollway import Gateway, Plan, Product, Segmenter, hookimpl
from tollway.scopes import ScopeChecker
from tollway_removebg import batch, leases
from tollway_removebg.commands import add_commands
from tollway_removebg.models import RemoveBgBase
from tollway_removebg.quota import CREDITS_LIMIT
from tollway_removebg.routes import ROUTES
from tollway_removebg.scopes import SCOPES, ProcessCoversBatches
from tollway_removebg.segmenter import RembgSegmenter
from tollway_removebg.service import PRODUCT, service_for
from tollway_removebg.settings import load

PRODUCT_DESCRIPTOR = Product(
    name=PRODUCT, prefix="/v1/removebg", title="Background removal", contract="removebg.yaml"
)


def _plan(name: str, rank: int, per_day: int, credits: int, description: str) -> Plan:
    return Plan(
        name,
        requests_per_day=per_day,
        rank=rank,
        description=description,
        limits={CREDITS_LIMIT: credits},
    )


@hookimpl
def tollway_register_products(register: Callable[[Product], None]) -> None:
    register(PRODUCT_DESCRIPTOR)


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
    register(PRODUCT, _plan("free", 0, 1_000, 50, "50 images a month"))
    register(PRODUCT, _plan("pro", 1, 20_000, 2_000, "2,000 images a month"))
    register(PRODUCT, _plan("business", 2, 200_000, 25_000, "25,000 images a month"))


@hookimpl
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    register(RemoveBgBase.metadata, Path(__file__).parent / "migrations")


@hookimpl
def tollway_register_routes(
    register: Callable[[str, Sequence[Any]], None], gateway: Gateway
) -> None:
    service = service_for(gateway)
    gateway.jobs.register(leases.JOB, partial(batch.run, service))
    register(PRODUCT, ROUTES)


@hookimpl
async def tollway_startup(gateway: Gateway) -> None:
    await service_for(gateway).start()


@hookimpl
async def tollway_shutdown(gateway: Gateway) -> None:
    await service_for(gateway).stop()


@hookimpl
def tollway_register_commands(commands: argparse._SubParsersAction[Any]) -> None:
    add_commands(commands)


@hookimpl(trylast=True)
def tollway_segmenter(gateway: Gateway) -> Segmenter:
    settings = load(gateway.settings.product(PRODUCT).settings)
    return RembgSegmenter(settings.model_file(), settings.model_name)
