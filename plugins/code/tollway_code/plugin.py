"""Registers the code product: its descriptor, scopes, plans and routes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tollway import Gateway, Plan, Product, hookimpl
from tollway_code.routes import BATCH_FEATURE, ROUTES

PRODUCT = Product(
    name="code",
    prefix="/v1/code",
    title="Code generation",
    contract="code.yaml",
)


@hookimpl
def tollway_register_products(register: Callable[[Product], None]) -> None:
    register(PRODUCT)


@hookimpl
def tollway_register_scopes(register: Callable[[str, str], None]) -> None:
    register("code:qr:generate", "Generate QR codes")
    register("code:barcode:generate", "Generate linear barcodes")
    register("code:batch:write", "Generate QR codes in batches (Pro plan or higher)")
    register("code:usage:read", "Read the key's usage in the current rate limit window")


@hookimpl
def tollway_register_plans(register: Callable[[str, Plan], None]) -> None:
    register("code", Plan("free", requests_per_day=100, rank=0, description="Try it out"))
    register("code", Plan("starter", requests_per_day=1_000, rank=1))
    register(
        "code", Plan("pro", requests_per_day=10_000, rank=2, features=frozenset({BATCH_FEATURE}))
    )
    register(
        "code",
        Plan("enterprise", requests_per_day=100_000, rank=3, features=frozenset({BATCH_FEATURE})),
    )


@hookimpl
def tollway_register_routes(
    register: Callable[[str, Sequence[Any]], None], gateway: Gateway
) -> None:
    register("code", ROUTES)
