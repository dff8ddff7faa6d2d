"""Registers the developer product: its descriptor, scope, plan and routes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tollway import Gateway, Plan, Product, hookimpl
from tollway_developer.routes import ROUTES, WEBHOOKS_SCOPE

PRODUCT = Product(
    name="developer",
    prefix="/v1/developer",
    title="Developer",
    contract="developer.yaml",
)


@hookimpl
def tollway_register_products(register: Callable[[Product], None]) -> None:
    register(PRODUCT)


@hookimpl
def tollway_register_scopes(register: Callable[[str, str], None]) -> None:
    # The other names of the spec's "developer key scopes" list (pos:read, orders:write,
    # ...) belong to the POS product, which registers them (docs/spec-decisions.md).
    register(WEBHOOKS_SCOPE, "Register, test and remove webhook endpoints")


@hookimpl
def tollway_register_plans(register: Callable[[str, Plan], None]) -> None:
    register(
        "developer",
        Plan("standard", requests_per_day=10_000, rank=0, description="Key and webhook management"),
    )


@hookimpl
def tollway_register_routes(
    register: Callable[[str, Sequence[Any]], None], gateway: Gateway
) -> None:
    register("developer", ROUTES)
