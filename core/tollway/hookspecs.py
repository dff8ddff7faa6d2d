"""The contract between the tollway core and its plugins.

Two families of hooks:

* Registration hooks (``tollway_register_*``) are called once per plugin at start-up
  with a ``register`` callback bound to that plugin. The core validates each item,
  records which plugin registered it and fails start-up on a duplicate.
* Mechanism hooks are ``firstresult``: the first plugin that returns an object wins.
  The core's own defaults live in ``tollway.defaults.*`` and are registered exactly
  like third-party plugins, ``trylast``, so any deployment can replace them.

Mechanism hooks are called once per gateway, never per request: they return an object
whose async methods do the per-request work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    import msgspec
    from click import Command
    from sqlalchemy import MetaData

    from tollway.auth import KeyAuthenticator
    from tollway.billing.processor import PaymentProcessor
    from tollway.errors import ErrorMapper
    from tollway.gateway import Gateway
    from tollway.geoip import GeoIP
    from tollway.jobs import JobFunction, JobQueue
    from tollway.ratelimit import RateLimiter
    from tollway.registry import Plan, Product
    from tollway.reports import Report
    from tollway.scopes import ScopeChecker
    from tollway.segmentation import Segmenter
    from tollway.webhooks import WebhookSigner


class RouteRegistrar(Protocol):
    """The ``register`` callback of :func:`tollway_register_routes`."""

    def __call__(
        self,
        product: str,
        handlers: Sequence[Any],
        *,
        dependencies: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None: ...


class ScopeRegistrar(Protocol):
    """The ``register`` callback of :func:`tollway_register_scopes`."""

    def __call__(self, name: str, description: str, *, grants: Iterable[str] = ()) -> None: ...


class CommandRegistrar(Protocol):
    """The ``register`` callback of :func:`tollway_register_commands`."""

    def __call__(
        self, command: Command, *, deprecated_aliases: Mapping[str, str] | None = None
    ) -> None: ...


hookspec = pluggy.HookspecMarker("tollway")
hookimpl = pluggy.HookimplMarker("tollway")


# Registration ---------------------------------------------------------------------


@hookspec
def tollway_register_products(register: Callable[[Product], None]) -> None:
    """Register the products this plugin serves.

    ``register(Product(name, prefix, ...))``. A product name or path prefix registered
    by two plugins fails start-up.
    """


@hookspec
def tollway_register_scopes(register: ScopeRegistrar) -> None:
    """Register API key scopes: ``register("code:qr:generate", "Generate QR codes")``.

    Scope names are ``<product>:<resource>:<action>``. Keys can only be created with
    registered scopes; a scope registered by two plugins fails start-up.

    ``grants=`` makes a broad scope a key can hold instead of several narrow ones:
    ``register("orders:read", "Read orders", grants=["pos:orders:read"])``. Each scope
    it grants must be another registered scope that grants nothing itself, or start-up
    fails. The default scope checker honours grants; a replacement should too.
    """


@hookspec
def tollway_register_events(register: Callable[[str, str], None]) -> None:
    """Register webhook event types: ``register("order.created", "An order was placed")``.

    Only registered events can be emitted or subscribed to; duplicates fail start-up.
    """


@hookspec
def tollway_register_plans(register: Callable[[str, Plan], None]) -> None:
    """Register default plans: ``register("code", Plan("free", requests_per_day=100))``.

    Operators override or add plans under ``[products.<name>.plans.<plan>]`` in the
    config file; the override wins field by field.
    """


@hookspec
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    """Register the plugin's tables and its Alembic migration folder.

    ``register(metadata, Path(__file__).parent / "migrations")``. The plugin owns one
    migration branch (``branch_labels = ("<plugin>",)``, ``depends_on`` the core).
    A table name registered by two plugins fails start-up.
    """


@hookspec
def tollway_register_routes(register: RouteRegistrar) -> None:
    """Register Litestar route handlers for a product: ``register("code", [handlers])``.

    Handlers are mounted under the product's prefix. Each declares how it admits
    requests in its ``opt``: the shorthand ``scope="code:qr:generate"``, ``admin=True``
    or ``public=True``, or ``access=tollway.Access(...)`` composed from the shared
    admission steps (a key in the query or body, anonymous callers counted per client
    address, an end customer's token). Checked here: a keyed handler declaring
    nothing, an unregistered scope or an inconsistent ``Access`` fails start-up.

    ``dependencies={"chat": provide_chat}`` adds Litestar dependency providers to
    the product's handlers: how they receive the product's services (a provider may
    take ``gateway``, ``caller`` and ``transaction``, the request's database
    transaction, and may be an async generator).
    """


@hookspec
def tollway_register_services(register: Callable[[object], None], gateway: Gateway) -> None:
    """Register the plugin's per-gateway services: ``register(Delivery(gateway))``.

    One instance per class and gateway; anyone reaches it with
    ``gateway.service(Delivery)``. A service with ``async start()`` and ``async
    stop()`` methods is started after the gateway's mechanisms and stopped before
    them. Called once per gateway, before the jobs are registered.
    """


@hookspec
def tollway_register_jobs(register: Callable[[str, JobFunction], None], gateway: Gateway) -> None:
    """Register background jobs: ``register("removebg.batch", run_batch)``.

    A job is an async function taking JSON-able keyword arguments, so any process's
    queue can run it (``gateway.jobs.enqueue("removebg.batch", job_id=7)``). A job
    name registered by two plugins fails start-up.
    """


@hookspec
def tollway_register_settings(register: Callable[[str, type[msgspec.Struct]], None]) -> None:
    """Register the msgspec Struct of a product's settings: ``register("chat",
    ChatSettings)``.

    The operator's ``[products.<name>.settings]`` table is converted into it at
    start-up; an unknown or mistyped key fails start-up naming it (the Struct must set
    ``forbid_unknown_fields=True``). Read them with ``gateway.product_settings(
    ChatSettings)``. Only the plugin that registered the product may register its
    settings; a product without registered settings accepts none.
    """


@hookspec
def tollway_register_reports(register: Callable[[Report], None]) -> None:
    """Register reports the analytics product serves for a product:
    ``register(Report("pos.sales_summary", "Sales summary", ..., compute=sales_summary,
    summary=(...), series=(...)))``.

    The id is ``<product>.<report_name>`` of a registered product; an account sees the
    report while it subscribes to that product. ``compute(gateway, period)`` returns a
    :class:`~tollway.reports.ReportData` for the account, days, zone and granularity of
    the :class:`~tollway.reports.Period`, summed by the database (see
    :mod:`tollway.reports` for the kit). A report id registered twice fails start-up.
    """


@hookspec(historic=True)
def tollway_add_hookspecs(register: Callable[..., None]) -> None:
    """Add hooks a plugin defines for other plugins to implement (like pytest's
    ``pytest_addhooks``): ``register(hookspecs_module, *defaults)``.

    ``defaults`` are registered as plugins after the specs, the plugin's own default
    implementations (``trylast``), exactly as the core registers its defaults. Historic:
    a plugin registered later still gets to add its hooks. A hook name defined twice
    fails start-up.
    """


@hookspec
def tollway_register_commands(register: CommandRegistrar) -> None:
    """Add a product's operator commands to the ``tollway`` command line:
    ``register(group)``, a :mod:`click` group (or command) named after a product this
    plugin registered, run as ``tollway <product> ...`` (``tollway chat inboxes create``).

    ``register(group, deprecated_aliases={"models": "models"})`` keeps an old top-level
    spelling working: ``tollway models ...`` warns on stderr, then runs ``tollway
    removebg models ...``. A command not named after a product of the registering
    plugin, or a name taken by a core command, another plugin or an alias, fails
    start-up naming the plugins. Called when a plugin's command is first needed
    (``tollway --help``, a name that is not a core command), not for core commands.

    In a command, ``tollway.cli.run_with_gateway(work)`` runs ``await work(gateway)``
    on the gateway the command line configures. Print results on stdout, messages on
    stderr; a ``ValueError`` ends the command with one ``tollway: <why>`` line, exit 2;
    an ``int`` returned is the exit status.
    """


@hookspec
def tollway_register_hosts(register: Callable[[str, str], None], gateway: Gateway) -> None:
    """Serve a product on a host of its own: ``register("go.example.com", "/l")``.

    A request whose ``Host`` header names ``host`` (any case, any port) is served as if
    its path started with ``prefix``, a registered product's prefix: ``GET /abc`` on
    ``go.example.com`` is ``GET /l/abc``. Paths whose first segment the gateway
    serves itself (``/v1/...``, ``/healthz``, ``/l/...``) are left as they are, so the
    host may also be the API's own. A host registered twice, or a prefix no product
    has, fails start-up. Called once per plugin when the ``Gateway`` is built, after
    the routes; with no host registered the app has no layer for it at all.
    """


@hookspec
def tollway_qr_content(content: str, origin: str, gateway: Gateway) -> str | None:
    """What a QR code drawn by this deployment encodes, given the text asked for.

    ``content`` is the text a caller asked a product (code) to encode; ``origin`` the
    public origin of that request (``https://api.example.com``, trusted proxies
    applied). Return a replacement for text the plugin recognises as its own, else
    ``None``; the first answer that is not ``None`` is encoded (plugins registered
    later are asked first), and with none the text is encoded as given. The
    short links product marks its own short links (``?qr=1``), so that their scans
    count as the ``(qr)`` referrer. Called on every QR code rendered: answer from
    memory.
    """


# Mechanisms (first result wins) ------------------------------------------------------


@hookspec(firstresult=True)
def tollway_key_authenticator(gateway: Gateway) -> KeyAuthenticator | None:
    """Return the object that turns an API key into a principal (or ``None``).

    Default: :class:`tollway.auth.DatabaseKeyAuthenticator`, hashed keys in the
    database behind a short-lived in-process cache.
    """


@hookspec(firstresult=True)
def tollway_scope_checker(gateway: Gateway) -> ScopeChecker | None:
    """Return the object deciding whether a key's scopes grant a required scope.

    Default: a scope is granted by itself or by a scope registered as granting it
    (:class:`tollway.scopes.RegisteredScopeChecker`).
    """


@hookspec(firstresult=True)
def tollway_rate_limiter(gateway: Gateway) -> RateLimiter | None:
    """Return the rate limiter backend.

    Default: Redis when ``redis_url`` is set, else process memory; both offer the
    fixed-window and sliding-window algorithms.
    """


@hookspec(firstresult=True)
def tollway_webhook_signer(gateway: Gateway) -> WebhookSigner | None:
    """Return the webhook signer.

    Default: ``X-Service-Signature: sha256=<hex HMAC-SHA256 of the raw body>``.
    """


@hookspec(firstresult=True)
def tollway_error_mapper(gateway: Gateway) -> ErrorMapper | None:
    """Return the object turning errors into responses in each product's error style.

    Default: :class:`tollway.errors.StyledErrorMapper` (``{"detail"}`` or ``{"error"}``).
    """


@hookspec(firstresult=True)
def tollway_job_queue(gateway: Gateway) -> JobQueue | None:
    """Return the background job queue.

    Default: an in-process asyncio queue (:class:`tollway.jobs.InProcessJobQueue`).
    """


@hookspec(firstresult=True)
def tollway_segmenter(gateway: Gateway) -> Segmenter | None:
    """Return the image segmentation model background removal uses (a
    :class:`tollway.segmentation.Segmenter`), or ``None`` to defer.

    Called once per gateway by the product that needs it. The core has no default:
    the removebg plugin provides one (rembg with U²-Net weights, ``trylast``).
    """


@hookspec(firstresult=True)
def tollway_geoip(gateway: Gateway) -> GeoIP | None:
    """Return the country lookup for client addresses (a :class:`tollway.GeoIP`).

    Called once per gateway, the first time something reads ``gateway.geoip``, so a
    deployment serving no product that needs it never loads a country database.
    Default: :class:`tollway.IptoccGeoIP`, the registries' data in the iptocc wheel.
    """


@hookspec(firstresult=True)
def tollway_payment_processor(gateway: Gateway) -> PaymentProcessor | None:
    """Return the payment processor billing charges through (a
    :class:`tollway.billing.PaymentProcessor`), or ``None`` to defer.

    Called once per gateway, the first time something reads ``gateway.payments``.
    Default: :class:`tollway.billing.LocalCardProcessor`, a real local processor that
    validates cards and answers like the well-known test cards; a deployment taking
    real payments returns an adapter for its processor instead.
    """


# Lifecycle ------------------------------------------------------------------------


@hookspec
def tollway_startup(gateway: Gateway) -> Awaitable[None] | None:
    """Called when the app starts, after the database and mechanisms are ready.

    May return an awaitable, which is awaited before serving.
    """


@hookspec
def tollway_shutdown(gateway: Gateway) -> Awaitable[None] | None:
    """Called when the app stops, before the database is closed."""
