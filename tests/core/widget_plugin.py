"""A small in-test product plugin, so core behaviour is tested apart from any product."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from litestar import get, post
from litestar.params import JSONBody

from tollway import CurrentCaller, Plan, Product, RouteRegistrar, hookimpl
from tollway.registry import ErrorStyle


class Widget(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    size: int = 1


@get("/widgets", scope="widgets:read")
async def list_widgets(caller: CurrentCaller) -> dict[str, Any]:
    return {"account": caller.principal.account_id, "plan": caller.plan.name}


@post("/widgets", scope="widgets:write", status_code=201)
async def create_widget(data: JSONBody[Widget]) -> Widget:
    return data


@get("/admin", admin=True)
async def admin_only() -> dict[str, bool]:
    return {"admin": True}


@get("/open", public=True)
async def public_route() -> dict[str, bool]:
    return {"public": True}


@get("/boom", scope="widgets:read")
async def boom() -> None:
    raise RuntimeError("kaboom")


class WidgetsPlugin:
    """Product ``widgets`` at /v1/widgets with plans tiny (3/day) and big."""

    def __init__(
        self, name: str = "widgets", prefix: str = "/v1/widgets", error_style: ErrorStyle = "detail"
    ) -> None:
        self.name = name
        self.prefix = prefix
        self.error_style: ErrorStyle = error_style

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(Product(self.name, self.prefix, title="Widgets", error_style=self.error_style))

    @hookimpl
    def tollway_register_scopes(self, register: Callable[[str, str], None]) -> None:
        register(f"{self.name}:read", "Read widgets")
        register(f"{self.name}:write", "Write widgets")

    @hookimpl
    def tollway_register_events(self, register: Callable[[str, str], None]) -> None:
        register(f"{self.name}.created", "A widget was created")

    @hookimpl
    def tollway_register_plans(self, register: Callable[[str, Plan], None]) -> None:
        register(self.name, Plan("tiny", requests_per_day=3))
        register(self.name, Plan("big", requests_per_day=1000, rank=1))

    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        register(self.name, [list_widgets, create_widget, admin_only, public_route, boom])


class GadgetsPlugin(WidgetsPlugin):
    """The same routes as a second product, to show products keep separate quotas."""

    def __init__(self) -> None:
        super().__init__("gadgets", "/v1/gadgets")

    @hookimpl
    def tollway_register_scopes(self, register: Callable[[str, str], None]) -> None:
        register("gadgets:read", "Read gadgets")
        register("gadgets:write", "Write gadgets")

    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        @get("/widgets", scope="gadgets:read")
        async def list_gadgets() -> dict[str, bool]:
            return {"gadgets": True}

        register(self.name, [list_gadgets])
