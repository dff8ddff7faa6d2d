"""The public scope and event catalogs list what the loaded plugins registered."""

from __future__ import annotations

from collections.abc import Callable

from tollway import Gateway, Plan, Product, hookimpl
from tollway.testing import GatewayFactory, gateway_client


class ShopPlugin:
    """A product registering a scope and events, as a POS product would."""

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(Product("shop", "/v1/shop"))

    @hookimpl
    def tollway_register_scopes(self, register: Callable[[str, str], None]) -> None:
        register("shop:orders:read", "Read orders")

    @hookimpl
    def tollway_register_events(self, register: Callable[[str, str], None]) -> None:
        register("order.created", "An order was placed")
        register("order.paid", "An order was paid")

    @hookimpl
    def tollway_register_plans(self, register: Callable[[str, Plan], None]) -> None:
        register("shop", Plan("basic", requests_per_day=10))


class AuditPlugin:
    """Registers an event without serving a product of its own."""

    @hookimpl
    def tollway_register_events(self, register: Callable[[str, str], None]) -> None:
        register("audit.logged", "Something was written to the audit log")


async def _gateway(factory: GatewayFactory) -> Gateway:
    return await factory(
        plugins=["developer"], extra_plugins=[("shop", ShopPlugin()), ("audit", AuditPlugin())]
    )


async def test_scopes_are_public_and_name_their_product(gateway_factory: GatewayFactory) -> None:
    gateway = await _gateway(gateway_factory)
    async with gateway_client(gateway) as client:
        response = await client.get("/v1/developer/scopes")
    assert response.status_code == 200
    assert "x-ratelimit-limit" not in response.headers
    body = response.json()
    by_name = {entry["name"]: entry for entry in body["data"]}
    assert by_name["shop:orders:read"] == {
        "name": "shop:orders:read",
        "description": "Read orders",
        "product": "shop",
    }
    assert by_name["webhooks:manage"]["product"] == "developer"
    assert body["total"] == len(body["data"]) == len(gateway.registry.scopes)
    assert body["page"] == 1
    assert [entry["name"] for entry in body["data"]] == sorted(by_name)


async def test_events_list_every_registered_event(gateway_factory: GatewayFactory) -> None:
    gateway = await _gateway(gateway_factory)
    async with gateway_client(gateway) as client:
        response = await client.get("/v1/developer/events")
    body = response.json()
    by_name = {entry["name"]: entry for entry in body["data"]}
    assert response.status_code == 200
    assert set(by_name) == set(gateway.registry.events)
    assert by_name["order.created"] == {
        "name": "order.created",
        "description": "An order was placed",
        "product": "shop",
    }
    assert by_name["audit.logged"] == {
        "name": "audit.logged",
        "description": "Something was written to the audit log",
    }


async def test_catalogs_page_and_check_their_bounds(gateway_factory: GatewayFactory) -> None:
    gateway = await _gateway(gateway_factory)
    async with gateway_client(gateway) as client:
        everything = (await client.get("/v1/developer/events")).json()
        second = await client.get("/v1/developer/events", params={"page": 2, "limit": 1})
        too_big = await client.get("/v1/developer/scopes", params={"limit": 101})
    assert second.json() == {
        "data": everything["data"][1:2],
        "total": everything["total"],
        "page": 2,
    }
    assert too_big.status_code == 400
    assert "limit" in too_big.json()["detail"]
