"""Registers the public QR API: its descriptor, the key scope, tiers and routes."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from tollway import Gateway, Plan, Product, RouteRegistrar, hookimpl
from tollway_qr.admission import ANONYMOUS, SCOPE
from tollway_qr.routes import ROUTES
from tollway_qr.service import QrService
from tollway_qr.settings import QrSettings

PRODUCT = Product(
    name="qr",
    prefix="/api/qr",
    title="Public QR code API",
    error_style="error",
    keyed=False,
    contract="qr.yaml",
    docs_url="/schema",
)


def _tier(name: str, rank: int, image: int, json: int, description: str) -> Plan:
    # Not served through the gateway pipeline: requests_per_day does not apply.
    return Plan(
        name,
        requests_per_day=0,
        rank=rank,
        description=description,
        limits={"image_per_minute": image, "json_per_minute": json},
    )


@hookimpl
def tollway_register_products(register: Callable[[Product], None]) -> None:
    register(PRODUCT)


@hookimpl
def tollway_register_scopes(register: Callable[[str, str], None]) -> None:
    register(SCOPE, "Use the public QR API at a key's tier (the only scope of such a key)")


@hookimpl
def tollway_register_plans(register: Callable[[str, Plan], None]) -> None:
    register("qr", _tier(ANONYMOUS, 0, 30, 20, "No key: limits per client address"))
    register("qr", _tier("free", 1, 300, 200, "Free key"))
    register("qr", _tier("pro", 2, 3_000, 2_000, "Pro key (announced, not yet sold)"))


@hookimpl
def tollway_register_settings(register: Callable[[str, type[msgspec.Struct]], None]) -> None:
    register("qr", QrSettings)


@hookimpl
def tollway_register_services(register: Callable[[object], None], gateway: Gateway) -> None:
    register(QrService(gateway))


@hookimpl
def tollway_register_routes(register: RouteRegistrar) -> None:
    register("qr", ROUTES, dependencies={"qr_service": QrService})
