"""Express lanes (tollway.admission.express): a busy key's requests admitted in plain
calls, with the answers the whole admission gives.

The lanes run on the in-memory limiter, so every gateway here has it, on both
database backends. The equivalence test drives the same requests, clock moves,
revocations and forgettings through a gateway with lanes and one without, and compares
every answer; the others check that lanes are taken and when each one must end.
"""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from kit_plugin import LedgerPlugin
from litestar import Litestar, get

from tollway import CurrentCaller, Gateway, Plan, Principal, Product, RouteRegistrar, hookimpl
from tollway.admission.express import ExpressLanes
from tollway.app import create_app
from tollway.auth import KeyAuthenticator
from tollway.pipeline import GATE, Gate
from tollway.ratelimit import MemoryRateLimiter
from tollway.testing import GatewayFactory
from tollway.testing.clients import BASE_URL, app_transport

PRODUCT = "lanes"
RATE_HEADERS = (
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "ratelimit-policy",
    "ratelimit",
    "retry-after",
)
EPOCH = 1_800_000_000.25
"""Where the tests' limiter clock starts: epoch seconds, mid-day UTC."""


@get("/whoami", scope="lanes:read")
async def whoami(caller: CurrentCaller) -> dict[str, Any]:
    decision = caller.decision
    assert decision is not None
    return {
        "account": caller.principal.account_id,
        "key": caller.principal.key_id,
        "plan": caller.plan.name,
        "product": caller.product.name,
        "decision": [
            decision.allowed,
            decision.limit,
            decision.remaining,
            decision.reset_at,
            decision.retry_after,
            decision.policy,
            decision.window,
            decision.decided_at,
        ],
    }


@get("/other", scope="lanes:read")
async def other() -> dict[str, bool]:
    return {"other": True}


@get("/write", scope="lanes:write")
async def write() -> dict[str, bool]:
    return {"written": True}


class LanesPlugin:
    """Product ``lanes``: three keyed routes on one daily quota, plans tiny and big."""

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(Product(PRODUCT, "/v1/lanes", title="Lanes"))

    @hookimpl
    def tollway_register_scopes(self, register: Callable[[str, str], None]) -> None:
        register("lanes:read", "Read")
        register("lanes:write", "Write")

    @hookimpl
    def tollway_register_plans(self, register: Callable[[str, Plan], None]) -> None:
        register(PRODUCT, Plan("tiny", requests_per_day=3))
        register(PRODUCT, Plan("big", requests_per_day=1000, rank=1))

    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        register(PRODUCT, [whoami, other, write])


class Clock:
    """A settable epoch clock for the limiter."""

    def __init__(self, now: float = EPOCH) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class WithoutLeases:
    """An authenticator that caches but does not lease: no lanes."""

    def __init__(self, inner: KeyAuthenticator) -> None:
        self.inner = inner

    async def authenticate(self, key: str) -> Principal | None:
        return await self.inner.authenticate(key)

    def cached(self, key: str) -> Principal | None:
        return self.inner.cached(key)  # type: ignore[attr-defined, no-any-return]

    def forget(self, key_id: int | None = None) -> None:
        self.inner.forget(key_id)


async def _gateway(factory: GatewayFactory, **settings: Any) -> Gateway:
    # The lanes count on the in-memory limiter's tallies: no Redis, on either backend.
    settings.setdefault("key_cache_ttl", 3600.0)
    return await factory(
        plugins=[], extra_plugins=[(PRODUCT, LanesPlugin())], redis_url=None, **settings
    )


async def _key(gateway: Gateway, plan: str, scopes: list[str] | None = None) -> tuple[str, int]:
    name = f"acme-{plan}-{len(scopes or ())}"
    account = await gateway.accounts.create_account(name, {PRODUCT: plan})
    created = await gateway.accounts.create_key(account, scopes=scopes or ["lanes:read"])
    return created.key, created.id


@asynccontextmanager
async def _served(gateway: Gateway) -> AsyncIterator[tuple[httpx.AsyncClient, Litestar]]:
    """A client into the gateway's app, and the app (to look at its lanes)."""
    async with (
        app_transport(gateway) as transport,
        httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client,
    ):
        yield client, transport.app  # type: ignore[misc]


def _gates(app: Litestar) -> dict[str, Gate]:
    """Each path's gate of its GET or POST handler (not its automatic OPTIONS)."""
    return {
        route.path: handler.opt[GATE]
        for route in app.routes
        for handler in getattr(route, "route_handlers", ())
        if GATE in handler.opt and handler.http_methods & {"GET", "POST"}
    }


def _lanes(app: Litestar, path: str = "/v1/lanes/whoami") -> ExpressLanes:
    gate = _gates(app)[path]
    assert gate.express is not None, f"{path} has no express lanes"
    lanes = gate.express.__self__
    assert isinstance(lanes, ExpressLanes)
    return lanes


def _answer(response: Any) -> tuple[int, dict[str, str], Any]:
    headers = {name: response.headers[name] for name in RATE_HEADERS if name in response.headers}
    return response.status_code, headers, response.json()


def _counting_cached(gateway: Gateway) -> list[str]:
    """Count the whole admission's plain-call key lookups, which lanes skip."""
    asked: list[str] = []
    cached = gateway.authenticator.cached  # type: ignore[attr-defined]

    def counting(key: str) -> Principal | None:
        asked.append(key)
        return cached(key)  # type: ignore[no-any-return]

    gateway.authenticator.cached = counting  # type: ignore[attr-defined]
    return asked


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_lanes_answer_as_the_whole_admission_does(
    gateway_factory: GatewayFactory, seed: int
) -> None:
    """The same steps through a gateway with lanes and one without give the same
    statuses, rate limit headers and callers (decisions included), request by request."""
    with_lanes = await _gateway(gateway_factory)
    without = await _gateway(gateway_factory)
    without.authenticator = WithoutLeases(without.authenticator)
    clock = Clock()
    for gateway in (with_lanes, without):
        assert isinstance(gateway.rate_limiter, MemoryRateLimiter)
        gateway.rate_limiter.clock = clock
    # Both read the same database: keys made through one are the other's too.
    keys = [
        await _key(with_lanes, "tiny"),
        await _key(with_lanes, "big"),
        await _key(with_lanes, "big", scopes=["lanes:read", "lanes:write"]),
    ]
    paths = ["/v1/lanes/whoami", "/v1/lanes/other", "/v1/lanes/write"]
    draw = random.Random(seed)
    async with _served(with_lanes) as (fast, fast_app), _served(without) as (slow, slow_app):
        assert _gates(fast_app)["/v1/lanes/whoami"].express is not None
        assert _gates(slow_app)["/v1/lanes/whoami"].express is None
        for step in range(150):
            roll = draw.random()
            if roll < 0.08:
                clock.now += draw.choice([0.4, 1.0, 59.0, 3_600.0, 86_400.0])
            elif roll < 0.1:
                forgotten = draw.choice([None, *(key_id for _, key_id in keys)])
                with_lanes.authenticator.forget(forgotten)
                without.authenticator.forget(forgotten)
            elif roll < 0.11 and len(keys) > 1:
                key, key_id = keys.pop(draw.randrange(len(keys)))
                assert await with_lanes.accounts.revoke_key(key_id)
                without.authenticator.forget(key_id)
                keys.append((key, key_id))  # still sent: refused from now on
            else:
                key, _ = draw.choice(keys)
                path = draw.choice(paths)
                headers = {"Authorization": f"Bearer {key}"}
                fast_answer = _answer(await fast.get(path, headers=headers))
                slow_answer = _answer(await slow.get(path, headers=headers))
                assert fast_answer == slow_answer, f"step {step}: {path}"
    assert len(_lanes(fast_app).lanes) > 0


async def test_a_busy_key_is_admitted_by_its_lane(gateway_factory: GatewayFactory) -> None:
    gateway = await _gateway(gateway_factory)
    key, _ = await _key(gateway, "big")
    asked = _counting_cached(gateway)
    headers = {"Authorization": f"Bearer {key}"}
    async with _served(gateway) as (client, _):
        first = await client.get("/v1/lanes/whoami", headers=headers)
        looked_up = len(asked)
        rest = [await client.get("/v1/lanes/whoami", headers=headers) for _ in range(5)]
    assert looked_up >= 1
    assert len(asked) == looked_up, "the lane admitted without the whole admission"
    remaining = [int(r.headers["x-ratelimit-remaining"]) for r in [first, *rest]]
    assert remaining == list(range(999, 993, -1))
    assert [r.json()["decision"][2] for r in rest] == remaining[1:]
    assert all(r.json()["plan"] == "big" for r in rest)


async def test_routes_of_one_product_count_on_one_tally(gateway_factory: GatewayFactory) -> None:
    gateway = await _gateway(gateway_factory)
    key, _ = await _key(gateway, "tiny")
    headers = {"Authorization": f"Bearer {key}"}
    async with _served(gateway) as (client, _):
        statuses = [
            (await client.get(path, headers=headers)).status_code
            for path in ("/v1/lanes/whoami", "/v1/lanes/other", "/v1/lanes/whoami")
        ]
        refused = await client.get("/v1/lanes/other", headers=headers)
    assert statuses == [200, 200, 200]
    assert refused.status_code == 429
    assert refused.headers["retry-after"]


@pytest.mark.parametrize("change", ["window", "forget", "expiry", "lease", "limiter closed"])
async def test_a_lane_ends_when_what_it_holds_changes(
    gateway_factory: GatewayFactory, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """After each change the next request takes the whole admission again, and is
    answered by it."""
    gateway = await _gateway(gateway_factory)
    limiter = gateway.rate_limiter
    assert isinstance(limiter, MemoryRateLimiter)
    clock = Clock()
    limiter.clock = clock
    keys_clock = Clock(1_000.0)
    gateway.authenticator.clock = keys_clock  # type: ignore[attr-defined]
    key, key_id = await _key(gateway, "big")
    asked = _counting_cached(gateway)
    headers = {"Authorization": f"Bearer {key}"}
    async with _served(gateway) as (client, app):
        await client.get("/v1/lanes/whoami", headers=headers)
        second = await client.get("/v1/lanes/whoami", headers=headers)
        before = len(asked)
        if change == "window":
            clock.now += 86_400
        elif change == "forget":
            gateway.authenticator.forget(key_id)
        elif change == "expiry":
            lane = next(iter(_lanes(app).lanes.values()))
            # The principal's expiry is read on every request: make it due.
            principal = lane.principal
            object.__setattr__(principal, "expires_at", time.time() + 60)
            monkeypatch.setattr(time, "time", lambda: principal.expires_at + 1)
        elif change == "lease":
            keys_clock.now += 3_600 * 0.75
        else:
            await limiter.close()
        after = await client.get("/v1/lanes/whoami", headers=headers)
    assert second.headers["x-ratelimit-remaining"] == "998"
    assert len(asked) > before, "the whole admission decided"
    if change == "expiry":
        assert after.status_code == 401
        assert after.json()["detail"] == "API key has expired"
        return
    assert after.status_code == 200
    # A new window, or the limiter's state forgotten, counts from the start again.
    expected = "999" if change in ("window", "limiter closed") else "997"
    assert after.headers["x-ratelimit-remaining"] == expected


async def test_no_lanes_where_the_whole_admission_must_run(
    gateway_factory: GatewayFactory,
) -> None:
    """Keys in the query or body, customer routes and anonymous ones have no lanes,
    nor has a gateway whose authenticator does not lease or whose limiter is Redis."""
    ledger = await gateway_factory(
        plugins=[], extra_plugins=[("ledger", LedgerPlugin())], redis_url=None
    )
    gates = _gates(create_app(ledger))
    assert gates["/v1/ledger/entries"].express is not None
    for path in ("/v1/ledger/query", "/v1/ledger/body", "/v1/ledger/me", "/v1/ledger/open"):
        assert gates[path].express is None, path
    no_leases = await _gateway(gateway_factory)
    no_leases.authenticator = WithoutLeases(no_leases.authenticator)
    assert _gates(create_app(no_leases))["/v1/lanes/whoami"].express is None


async def test_redis_limiter_has_no_lanes(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=[], extra_plugins=[(PRODUCT, LanesPlugin())])
    gate = _gates(create_app(gateway))["/v1/lanes/whoami"]
    assert (gate.express is None) == (gateway.settings.redis_url is not None)
