"""The ASGI apps the benchmarks serve, as granian factories.

The gateway overhead benchmark's two serve the same trivial handler at the same path,
``GET /v1/bench/ping`` -> ``{"ok": true}``:

* ``apps:bare_app`` - a plain Litestar app with that one route, no tollway at all;
* ``apps:gateway_app`` - a tollway gateway whose only product is :class:`BenchPlugin`,
  so every request runs the whole pipeline: key auth (cached), subscription, scope,
  rate limit (a quota that never trips) and the response headers.

``apps:qr_app``, ``apps:chat_app``, ``apps:link_app`` and ``apps:pos_app`` serve products
for ``bench/qr.py``, ``bench/chat.py``, ``bench/links.py`` and ``bench/pos.py``; the chat,
link and point of sale ones keep the benchmark route beside the product's routes.

The gateway factories read their settings from the ``TOLLWAY_*`` environment like
``tollway.asgi`` does (``bench/run.py`` sets them for the server subprocess), e.g.::

    TOLLWAY_DATABASE_URL=sqlite+aiosqlite:////tmp/x/bench.db TOLLWAY_PLUGINS=bench \\
    PYTHONPATH=bench granian --interface asgi --factory apps:gateway_app
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from litestar import Litestar, get
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from tollway import Gateway, Plan, Product, RouteRegistrar, hookimpl, load_settings
from tollway.app import create_app

if TYPE_CHECKING:
    from tollway_chat.channels import OutboundMessage

PRODUCT = "bench"
PREFIX = "/v1/bench"
ROUTE = "/ping"
PATH = PREFIX + ROUTE
SCOPE = "bench:read"
PLAN = "unlimited"
REQUESTS_PER_DAY = 10**9
"""High enough that no benchmark ever trips the limit: every request is admitted."""


async def ping() -> dict[str, bool]:
    """The handler both apps serve: as little work as an endpoint can do."""
    return {"ok": True}


class BenchPlugin:
    """Product ``bench`` at /v1/bench: one keyed route needing scope ``bench:read``."""

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(Product(PRODUCT, PREFIX, title="Benchmark"))

    @hookimpl
    def tollway_register_scopes(self, register: Callable[[str, str], None]) -> None:
        register(SCOPE, "Call the benchmark endpoint")

    @hookimpl
    def tollway_register_plans(self, register: Callable[[str, Plan], None]) -> None:
        register(PRODUCT, Plan(PLAN, requests_per_day=REQUESTS_PER_DAY))

    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        register(PRODUCT, [get(ROUTE, scope=SCOPE)(ping)])


def plugins() -> list[tuple[str, object]]:
    """The ``extra_plugins`` every benchmark gateway is built with."""
    return [(PRODUCT, BenchPlugin())]


async def prepare_database(database_url: str) -> str:
    """Migrate the database, create an account on the bench plan and return its key."""
    settings = load_settings(environ={}, database_url=database_url, plugins=[PRODUCT], demo=False)
    gateway = Gateway(settings, extra_plugins=plugins())
    try:
        await gateway.migrate()
        account = await gateway.accounts.create_account("bench", {PRODUCT: PLAN})
        created = await gateway.accounts.create_key(account, name="bench", scopes=[SCOPE])
        return created.key
    finally:
        await gateway.database.dispose()


def bare_app() -> Litestar:
    """Variant (a): the handler on plain Litestar."""
    return Litestar(route_handlers=[get(PATH)(ping)])


GATEWAY_HEADERS = [
    (b"x-request-id", b"4f3c2b1a0e9d8c7b0000000000012345"),
    (b"x-ratelimit-limit", b"1000000000"),
    (b"ratelimit-policy", b'"daily";q=1000000000;w=86400'),
    (b"x-ratelimit-remaining", b"999987654"),
    (b"x-ratelimit-reset", b"1764460800"),
    (b"ratelimit", b'"daily";r=999987654;t=43210'),
]
"""Headers of the same names and sizes as those the gateway adds to a bench response."""


def bare_headers_app() -> ASGIApp:
    """A control: bare Litestar whose responses carry :data:`GATEWAY_HEADERS`, added to
    the start message as the gateway's entry adds its own. Against bare it prices the
    bytes alone (the server, the client and the socket handling six more headers);
    against the gateway, what the gateway does besides sending them."""
    app = bare_app()

    async def with_headers(scope: Scope, receive: Receive, send: Send) -> None:
        def stamped(message: Message) -> Awaitable[None]:
            if message["type"] == "http.response.start":
                message["headers"].extend(GATEWAY_HEADERS)  # type: ignore[union-attr]
            return send(message)

        await app(scope, receive, stamped)

    return with_headers


def gateway_app() -> Litestar:
    """Variant (b): the handler behind the tollway pipeline, configured from the env."""
    return create_app(Gateway(load_settings(), extra_plugins=plugins()), server=True)


def qr_app() -> Litestar:
    """The public QR API benchmark's app (``bench/qr.py``): the gateway as
    ``tollway.asgi`` builds it, as a factory, with ``TOLLWAY_PLUGINS=qr`` and a
    ``TOLLWAY_CONFIG`` lifting the anonymous tier's limits set by the caller."""
    return create_app(Gateway(load_settings()), server=True)


class AcceptingChannel:
    """A channel whose every send succeeds at once, as ``live_chat`` does when the
    contact has a stream open: delivery costs its job (load, send, record), no more."""

    async def send(self, message: OutboundMessage) -> None:
        return None


class AcceptingChannelPlugin:
    """Sends the messages of ``live_chat`` inboxes through :class:`AcceptingChannel`
    (the chat plugin's own channels are ``trylast``, so this one wins)."""

    @hookimpl
    def tollway_chat_channel(self, channel_type: str, gateway: Gateway) -> object | None:
        return AcceptingChannel() if channel_type == "live_chat" else None


def chat_app() -> Litestar:
    """The chat benchmark's app (``bench/chat.py``): the gateway with ``chat`` and the
    benchmark route (``TOLLWAY_PLUGINS=bench,chat``), so the trivial-route baseline is
    served by the same process, database and rate limiter as the chat routes."""
    extra = [*plugins(), ("bench-accepting-channel", AcceptingChannelPlugin())]
    return create_app(Gateway(load_settings(), extra_plugins=extra), server=True)


def link_app() -> Litestar:
    """The short links benchmark's app (``bench/links.py``): the gateway with ``link``
    and the benchmark route (``TOLLWAY_PLUGINS=bench,link``), so the trivial-route
    baseline is served by the same process, database and rate limiter as the redirects."""
    return create_app(Gateway(load_settings(), extra_plugins=plugins()), server=True)


def pos_app() -> Litestar:
    """The point of sale benchmark's app (``bench/pos.py``): the gateway with ``pos`` and
    the benchmark route (``TOLLWAY_PLUGINS=bench,pos``), so the trivial-route baseline is
    served by the same process, database and rate limiter as the catalog and orders."""
    return create_app(Gateway(load_settings(), extra_plugins=plugins()), server=True)
