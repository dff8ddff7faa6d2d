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

import argparse
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from sqlalchemy import MetaData

    from tollway.auth import KeyAuthenticator
    from tollway.errors import ErrorMapper
    from tollway.gateway import Gateway
    from tollway.jobs import JobQueue
    from tollway.ratelimit import RateLimiter
    from tollway.registry import Plan, Product
    from tollway.scopes import ScopeChecker
    from tollway.segmentation import Segmenter
    from tollway.webhooks import WebhookSigner

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
def tollway_register_scopes(register: Callable[[str, str], None]) -> None:
    """Register API key scopes: ``register("code:qr:generate", "Generate QR codes")``.

    Scope names are ``<product>:<resource>:<action>``. Keys can only be created with
    registered scopes; a scope registered by two plugins fails start-up.
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
def tollway_register_routes(
    register: Callable[[str, Sequence[Any]], None], gateway: Gateway
) -> None:
    """Register Litestar route handlers for a product: ``register("code", [handlers])``.

    Handlers are mounted under the product's prefix. Each handler declares its access
    in its ``opt``: ``scope="code:qr:generate"``, ``admin=True`` or ``public=True``.
    A keyed handler that declares none, or an unregistered scope, fails start-up.
    ``admit=<async step(request)>`` adds a product's own admission step, run before
    the body is read (keyless products use it to rate-limit by client address);
    ``report=<async step(scope)>`` then puts the caller's rate limit headers on the
    answers that admission never reached (405, 413, automatic ``OPTIONS``), without
    counting anything.
    """


@hookspec
def tollway_register_commands(commands: argparse._SubParsersAction[Any]) -> None:
    """Add subcommands to the ``tollway`` command line.

    ``commands`` is argparse's sub-parser collection: ``chat = commands.add_parser(
    "chat")``, then ``set_defaults(handler=fn)`` with ``fn(args) -> int`` (the exit
    status). Run async work against the configured gateway with
    ``tollway.cli.run_with_gateway(args, work)``. Print results on stdout, messages on
    stderr.
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

    Default: exact match (:class:`tollway.scopes.ExactScopeChecker`).
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


# Lifecycle ------------------------------------------------------------------------


@hookspec
def tollway_startup(gateway: Gateway) -> Awaitable[None] | None:
    """Called when the app starts, after the database and mechanisms are ready.

    May return an awaitable, which is awaited before serving.
    """


@hookspec
def tollway_shutdown(gateway: Gateway) -> Awaitable[None] | None:
    """Called when the app stops, before the database is closed."""
