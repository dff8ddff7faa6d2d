"""In-process microbenchmark of the gateway's per-request work: what each step costs.

No server and no network, so the numbers are steadier than bench/run.py's (but still
from a shared machine: compare rows of one run). Three sections:

* pipeline steps: each step of a route's ``gate.admit`` and ``stamp_response_headers`` on
  its own, in microseconds per call (best of ``--repeat`` batches), and ``gate.admit``
  timed inside whole requests, where it costs more than in a tight loop (the rest of
  the request crowds it out of the CPU's caches). This pokes at tollway internals on
  purpose, so it may need updating when they change;
* whole requests pushed through each ASGI app directly: ``bare`` against Litestar
  configured like ``create_app`` with hooks that do nothing (``+noop guard`` ...), the
  real gateway apps (admitted by each route's entry, ``tollway.entry``, not a guard:
  Litestar runs ``copy(route_handler)`` for every guard call, timed below);
* the Redis client: CPU per rate limit hit with 32 hits in flight, as configured and
  with redis-py's defaults.

    python bench/micro.py [--iterations N] [--repeat R] [--skip-redis]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import apps
import uvloop
from common import add_redis_url, argument_parser, redis_drop
from litestar import Litestar, Request, Response, Router, get
from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler
from litestar.types import HTTPRequestEvent, Message, Scope

from tollway import Gateway, load_settings
from tollway.admission.access import bearer_token
from tollway.app import create_app
from tollway.auth import DatabaseKeyAuthenticator
from tollway.entry import RouteEntry, stamping
from tollway.keys import hash_key, is_well_formed
from tollway.pipeline import GATE, Caller, Gate
from tollway.plans import daily_quota
from tollway.state import request_id, request_state
from tollway.testing import redis_unreachable

Step = Callable[[], Awaitable[object]]


async def timed(step: Step, iterations: int, repeat: int) -> float:
    """Best microseconds per call of ``step`` over ``repeat`` batches."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(iterations):
            await step()
        best = min(best, (time.perf_counter_ns() - start) / iterations / 1000)
    return best


def sync(function: Callable[[], object]) -> Step:
    async def step() -> object:
        return function()

    return step


def http_scope(path: str, headers: list[tuple[bytes, bytes]]) -> Scope:
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "extensions": {},
        "state": {},
    }
    return scope  # type: ignore[return-value]


def request_step(app: Litestar, headers: list[tuple[bytes, bytes]]) -> Step:
    """One full GET through ``app``, failing loudly on a non-200."""

    async def receive() -> HTTPRequestEvent:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] != 200:
            raise RuntimeError(f"status {message['status']}")

    async def step() -> None:
        await app(http_scope(apps.PATH, headers), receive, send)

    return step


async def _noop_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    return None


async def _noop_before_send(message: Message, scope: Scope) -> None:
    return None


async def _noop_before_request(request: Request[Any, Any, Any]) -> None:
    return None


def _fail(request: Request[Any, Any, Any], error: Exception) -> Response[str]:
    return Response(str(error), status_code=500)


def framework_app(
    *,
    guard: bool = False,
    before_send: bool = False,
    before_request: bool = False,
) -> Litestar:
    """The bench route on Litestar configured like create_app (router with opt,
    exception handler), with whichever no-op hooks are asked for."""
    return Litestar(
        route_handlers=[
            Router(
                path=apps.PREFIX,
                route_handlers=[get(apps.ROUTE, scope=apps.SCOPE)(apps.ping)],
                opt={"product": apps.PRODUCT},
            )
        ],
        guards=[_noop_guard] if guard else [],
        before_send=[_noop_before_send] if before_send else [],
        before_request=_noop_before_request if before_request else None,
        exception_handlers={Exception: _fail},
    )


def gate_of(app: Litestar) -> tuple[BaseRouteHandler, Gate]:
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            gate: Gate | None = handler.opt.get(GATE)
            if gate is not None and not gate.public:
                return handler, gate
    raise LookupError("no keyed route")


async def pipeline_steps(
    gateway: Gateway, app: Litestar, key: str, iterations: int, repeat: int
) -> list[tuple[str, float]]:
    handler, gate = gate_of(app)
    assert gate.admit is not None
    admit_request = gate.admit
    authenticator = gateway.authenticator
    assert isinstance(authenticator, DatabaseKeyAuthenticator)
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {key}".encode())]
    scope = http_scope(apps.PATH, headers)
    principal = await authenticator.authenticate(key)
    assert principal is not None
    plan = gateway.plans[apps.PRODUCT][apps.PLAN]
    quota = daily_quota(plan)
    limiter = gateway.rate_limiter
    decision = await limiter.hit(f"{apps.PRODUCT}:{principal.account_id}", quota)
    digest = hash_key(key)

    async def load() -> object:
        return await authenticator._load(digest)

    async def receive() -> HTTPRequestEvent:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def admit() -> None:
        await admit_request(scope, receive, request_state(scope))

    express = gate.express  # the memory limiter's routes have lanes, Redis's none
    state = request_state(scope)
    await admit()  # opens the lane

    start_message: Message = {"type": "http.response.start", "status": 200, "headers": []}

    async def sent(message: Message) -> None:
        return None

    route = gateway.metrics.route(apps.PRODUCT, apps.ROUTE)

    async def stamp() -> None:
        fresh = http_scope(apps.PATH, headers)
        state = request_state(fresh)
        state.headers = decision.headers()
        stamped = stamping(sent, fresh, state, route, None, None)
        await stamped(dict(start_message))  # type: ignore[arg-type]

    async def hit() -> object:
        return await limiter.hit(f"{apps.PRODUCT}:{principal.account_id}", quota)

    steps: list[tuple[str, Step]] = [
        ("bearer_token(headers)", sync(lambda: bearer_token(scope["headers"]))),
        ("is_well_formed(key) [regex]", sync(lambda: is_well_formed(key))),
        ("hash_key(key) [sha256]", sync(lambda: hash_key(key))),
        ("authenticate(key), cached", lambda: authenticator.authenticate(key)),
        ("limiter.hit (fixed window)", hit),
        ("Decision.headers()", sync(decision.headers)),
        ("Caller(...)", sync(lambda: Caller(principal, gate.product, plan, decision))),
        ("gate.admit, total (whole way)", admit),
        *(
            [("express lane [gate.express]", sync(lambda: express(state)))]
            if express is not None
            else []
        ),
        ("request_id(scope) [new id]", sync(lambda: request_id(http_scope("/", [])))),
        ("start + headers + stamped send", stamp),
        ("key cache miss: _load(digest)", load),
        ("copy(route handler) [per guard]", sync(lambda: copy.copy(handler))),
    ]
    return [(name, await timed(step, iterations, repeat)) for name, step in steps]


async def admit_in_requests(
    gateway: Gateway, key: str, iterations: int, repeat: int
) -> tuple[str, float]:
    """Microseconds per admission (the route's express lane, else ``gate.admit``)
    timed inside whole requests (best of ``repeat`` batches), on an app of its own whose
    keyed route's entry times its admission."""
    app = create_app(gateway)
    _, gate = gate_of(app)
    admit, express = gate.admit, gate.express
    assert admit is not None
    spent = 0

    async def timed_admit(scope: Scope, receive: Any, state: Any) -> None:
        nonlocal spent
        start = time.perf_counter_ns()
        await admit(scope, receive, state)
        spent += time.perf_counter_ns() - start

    def timed_express(state: Any) -> bool:
        nonlocal spent
        start = time.perf_counter_ns()
        admitted = express(state) if express is not None else False
        spent += time.perf_counter_ns() - start
        return admitted

    entry, _, *_ = app.asgi_router.handle_routing(apps.PATH, "GET")
    assert isinstance(entry, RouteEntry)
    entry._admit = timed_admit
    entry._express = timed_express
    step = request_step(
        app, [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {key}".encode())]
    )
    best = float("inf")
    for _ in range(repeat):
        spent = 0
        for _ in range(iterations):
            await step()
        best = min(best, spent / iterations / 1000)
    return "admission inside requests", best


async def app_requests(
    apps_under_test: list[tuple[str, Litestar]], key: str, iterations: int, repeat: int
) -> list[tuple[str, float]]:
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {key}".encode())]
    results: dict[str, float] = {name: float("inf") for name, _ in apps_under_test}
    # Alternate the apps batch by batch, so drift on a noisy machine hits them all.
    for _ in range(repeat):
        for name, app in apps_under_test:
            cost = await timed(request_step(app, headers), iterations, 1)
            results[name] = min(results[name], cost)
    return list(results.items())


async def redis_costs(url: str, prefix: str, hits: int) -> list[tuple[str, float]]:
    """Microseconds of wall time per rate limit hit with 32 hits in flight at once: the
    event loop is the bottleneck here, so this is the client's CPU cost per hit."""
    import redis.asyncio

    from tollway.ratelimit import RedisRateLimiter
    from tollway.registry import Plan

    quota = daily_quota(Plan("unlimited", requests_per_day=apps.REQUESTS_PER_DAY))
    concurrency = 32
    results: list[tuple[str, float]] = []

    async def concurrent(limiter: RedisRateLimiter) -> float:
        await limiter.hit("warm", quota)  # loads the script

        async def worker() -> None:
            for _ in range(hits // concurrency):
                await limiter.hit("bench:1", quota)

        start = time.perf_counter_ns()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return (time.perf_counter_ns() - start) / (hits // concurrency * concurrency) / 1000

    # (The limiter batches one loop turn's hits into one EVALSHA itself.)
    configured = RedisRateLimiter.from_url(url, prefix=f"{prefix}a:")
    default_client = RedisRateLimiter(redis.asyncio.Redis.from_url(url), f"{prefix}b:")
    try:
        results.append(("RedisRateLimiter.from_url .hit", await concurrent(configured)))
        results.append(("same, redis-py default client", await concurrent(default_client)))
    finally:
        await configured.close()
        await default_client.close()
    return results


async def main_async(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="tollway-micro-"))
    database_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
    prefix = f"tollway-bench:{secrets.token_hex(6)}:"
    gateways: list[tuple[str, Gateway]] = []
    use_redis = False
    try:
        key = await apps.prepare_database(database_url)
        common: dict[str, Any] = {
            "database_url": database_url,
            "plugins": [apps.PRODUCT],
            "demo": False,
            # Long enough that the timed loops measure the cached path only.
            "key_cache_ttl": 3600.0,
        }
        memory = Gateway(load_settings(environ={}, **common), extra_plugins=apps.plugins())
        gateways.append(("pipeline-memory", memory))
        use_redis = not args.skip_redis and await redis_unreachable(args.redis_url) is None
        if use_redis:
            settings = load_settings(
                environ={}, redis_url=args.redis_url, rate_limit_prefix=prefix, **common
            )
            gateways.append(("pipeline-redis", Gateway(settings, extra_plugins=apps.plugins())))
        gateway_apps = [(name, create_app(gateway)) for name, gateway in gateways]
        for (name, gateway), (_, app) in zip(gateways, gateway_apps, strict=True):
            print(f"\n## {name}: pipeline steps (us per call, best of {args.repeat})\n")
            steps = await pipeline_steps(gateway, app, key, args.iterations, args.repeat)
            steps.append(await admit_in_requests(gateway, key, args.iterations, args.repeat))
            for step, cost in steps:
                print(f"  {step:<34} {cost:8.2f}")
        under_test: list[tuple[str, Litestar]] = [
            ("bare", apps.bare_app()),
            ("router+handler", framework_app()),
            ("+noop guard", framework_app(guard=True)),
            ("+noop before_send", framework_app(before_send=True)),
            ("+noop before_request", framework_app(before_request=True)),
            ("+noop guard+b_send", framework_app(guard=True, before_send=True)),
            *gateway_apps,
        ]
        print(f"\n## whole requests in process (us per request, best of {args.repeat})\n")
        # No lifespan: the route needs nothing gateway.start() provides.
        results = await app_requests(under_test, key, args.iterations, args.repeat)
        bare = results[0][1]
        for name, cost in results:
            print(f"  {name:<22} {cost:8.2f}   +{cost - bare:6.2f} over bare   x{cost / bare:.2f}")
        if use_redis:
            print("\n## Redis client: us per hit, 32 in flight (event-loop CPU per hit)\n")
            for name, cost in await redis_costs(args.redis_url, prefix, args.iterations * 2):
                print(f"  {name:<34} {cost:8.2f}")
    finally:
        for _, gateway in gateways:
            await gateway.rate_limiter.close()
            await gateway.database.dispose()
        if use_redis:
            await redis_drop(args.redis_url, prefix)
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser("micro.py", __doc__)
    parser.add_argument("--iterations", type=int, default=2000, help="calls per batch (2000)")
    parser.add_argument("--repeat", type=int, default=5, help="batches; the best counts (5)")
    parser.add_argument("--skip-redis", action="store_true", help="leave out the Redis variant")
    add_redis_url(parser, "Redis for the Redis variant and the client costs")
    args = parser.parse_args(argv)
    uvloop.run(main_async(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
