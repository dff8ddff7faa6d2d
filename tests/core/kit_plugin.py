"""A small product built on every piece of the plugin kit, for the kit's own tests.

``ledger`` at /v1/ledger: typed settings, a per-gateway service started and stopped
by the gateway, a job, a plugin-owned hook with its default, routes receiving a
service and the request's transaction by dependency injection, a keyless route
counted per client address, a key sent in the query or the body, and a route acting
for an end customer.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable
from typing import Any

import msgspec
from litestar import get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import (
    Access,
    BodyKey,
    Conflict,
    CurrentCaller,
    CurrentCustomer,
    Gateway,
    JobFunction,
    Plan,
    Product,
    QueryKey,
    RouteRegistrar,
    Window,
    hookimpl,
)

PRODUCT = Product("ledger", "/v1/ledger", title="Ledger")


class LedgerSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    greeting: str = "hello"
    """What ``GET /hello`` says."""
    limit: int = 10


class Ledger:
    """A per-gateway service recording its lifecycle and the jobs it ran."""

    def __init__(self, gateway: Gateway) -> None:
        self.settings = gateway.product_settings(LedgerSettings)
        self.events: list[str] = []
        self.recorded = asyncio.Event()

    async def start(self) -> None:
        self.events.append("start")

    async def stop(self) -> None:
        self.events.append("stop")

    async def record(self, entry: str) -> None:
        self.events.append(f"job:{entry}")
        self.recorded.set()


class Entry(msgspec.Struct, forbid_unknown_fields=True):
    amount: int
    api_key: str | None = None


hookspecs = types.ModuleType("tollway_ledger_hookspecs")
exec(  # a plugin-owned hook, defined like any hookspecs module
    "import pluggy\n"
    "hookspec = pluggy.HookspecMarker('tollway')\n"
    "@hookspec(firstresult=True)\n"
    "def tollway_ledger_currency():\n"
    "    '''The currency entries are in.'''\n",
    hookspecs.__dict__,
)


class DefaultCurrency:
    @hookimpl(trylast=True)
    def tollway_ledger_currency(self) -> str:
        return "EUR"


@get("/hello", scope="ledger:read", sync_to_thread=False)
def hello(ledger: NamedDependency[Ledger]) -> dict[str, str]:
    return {"greeting": ledger.settings.greeting}


@post("/entries", scope="ledger:write", status_code=201)
async def add_entry(
    data: JSONBody[Entry], transaction: NamedDependency[AsyncSession], caller: CurrentCaller
) -> dict[str, int]:
    await transaction.execute(
        text("INSERT INTO ledger_entries (account_id, amount) VALUES (:account, :amount)"),
        {"account": caller.principal.account_id, "amount": data.amount},
    )
    if data.amount < 0:
        raise Conflict("Entries must not be negative")  # rolls the insert back
    return {"amount": data.amount}


@get("/entries", scope="ledger:read")
async def count_entries(transaction: NamedDependency[AsyncSession]) -> dict[str, int]:
    total = await transaction.scalar(text("SELECT count(*) FROM ledger_entries"))
    return {"entries": int(total or 0)}


PER_MINUTE = Window("per_minute", 60, counter="open")


@get("/open", access=Access(key=None, anonymous="anonymous", window=PER_MINUTE))
async def open_route() -> dict[str, bool]:
    return {"open": True}


@get("/query", access=Access(key=QueryKey("api_key"), scope="ledger:read"))
async def by_query(caller: CurrentCaller) -> dict[str, int]:
    return {"account": caller.principal.account_id}


@post(
    "/body",
    access=Access(
        key=BodyKey("api_key"), anonymous="anonymous", scope="ledger:write", window=PER_MINUTE
    ),
    status_code=200,
)
async def by_body(data: JSONBody[Entry]) -> dict[str, int]:
    return {"amount": data.amount}


@get("/me", access=Access(scope="ledger:read", customer=True))
async def me(customer: CurrentCustomer) -> dict[str, Any]:
    return {"customer": customer.id, "account": customer.account_id}


class LedgerPlugin:
    def __init__(self, **overrides: Any) -> None:
        self.overrides = overrides

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(PRODUCT)

    @hookimpl
    def tollway_register_scopes(self, register: Callable[[str, str], None]) -> None:
        register("ledger:read", "Read the ledger")
        register("ledger:write", "Write the ledger")

    @hookimpl
    def tollway_register_plans(self, register: Callable[[str, Plan], None]) -> None:
        register("ledger", Plan("anonymous", 0, limits={"per_minute": 3}))
        register("ledger", Plan("basic", 100, rank=1, limits={"per_minute": 5}))

    @hookimpl
    def tollway_register_settings(
        self, register: Callable[[str, type[msgspec.Struct]], None]
    ) -> None:
        register("ledger", LedgerSettings)

    @hookimpl
    def tollway_register_services(
        self, register: Callable[[object], None], gateway: Gateway
    ) -> None:
        register(Ledger(gateway))

    @hookimpl
    def tollway_register_jobs(
        self, register: Callable[[str, JobFunction], None], gateway: Gateway
    ) -> None:
        register("ledger.record", gateway.service(Ledger).record)

    @hookimpl
    def tollway_add_hookspecs(self, register: Callable[..., None]) -> None:
        register(hookspecs, DefaultCurrency())

    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        register(
            "ledger",
            [hello, add_entry, count_entries, open_route, by_query, by_body, me],
            dependencies={"ledger": Ledger},
        )

    @hookimpl
    async def tollway_startup(self, gateway: Gateway) -> None:
        async with gateway.database.transaction() as session:
            await session.execute(
                text(
                    "CREATE TABLE IF NOT EXISTS ledger_entries "
                    "(account_id INTEGER NOT NULL, amount INTEGER NOT NULL)"
                )
            )
            await session.execute(text("DELETE FROM ledger_entries"))
