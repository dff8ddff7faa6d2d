"""pytest fixtures and helpers for testing tollway and its plugins against real backends.

Loaded automatically (``pytest11`` entry point). Tests that take ``gateway_factory``
(or ``product_client``) run twice: on SQLite with the in-memory limiter, and on
PostgreSQL with Redis. When PostgreSQL or Redis cannot be reached the PostgreSQL run
is skipped locally and fails under ``CI=true``.

Settings: ``TOLLWAY_TEST_POSTGRES_URL`` (default the local ``test`` database, used to
create a throwaway database per session), ``TOLLWAY_TEST_REDIS_URL``, and
``TOLLWAY_TEST_BACKENDS`` (``sqlite``, ``postgresql`` or both, comma-separated).

A plugin whose product needs settings to run in tests at all (a model file, say)
implements the pytest hook ``pytest_tollway_product_settings`` in a pytest plugin of
its own; :func:`product_test_settings` collects the answers (the contract and
hostile-input tests, which load every installed product, use it).

The modules, by concern: :mod:`~tollway.testing.backends` (databases, Redis and
``gateway_factory``), :mod:`~tollway.testing.clients` (calling a gateway in-process),
:mod:`~tollway.testing.products` (testing one product), :mod:`~tollway.testing.events`
(subscribing to events and reading what was emitted), :mod:`~tollway.testing.processes`
(``tollway serve`` and ``tollway worker`` as processes), :mod:`~tollway.testing.servers`
(Redis, PostgreSQL, webhook receivers and web sites a test owns),
:mod:`~tollway.testing.browsers` (Debian's Chromium for page tests),
:mod:`~tollway.testing.hosted_pages` (hosted card pages as a browser uses them),
:mod:`~tollway.testing.migrations` (one migration revision at a time).
"""

import pytest

from tollway.testing.backends import (
    BACKENDS,
    POSTGRES_URL,
    REDIS_URL,
    Backend,
    GatewayFactory,
    backend,
    create_postgres_database,
    database_dump,
    drop_postgres_database,
    gateway_factory,
    redis_unreachable,
    unavailable,
)
from tollway.testing.browsers import CHROMIUM, chromium, chromium_launch_options
from tollway.testing.clients import RawAnswer, Tenant, gateway_client, raw_request, tenant
from tollway.testing.events import emitted, subscribe
from tollway.testing.hosted_pages import (
    DECLINED_CARD,
    GOOD_CARD,
    CardPageInBrowser,
    HostedPageClient,
    RenderedPage,
    assert_card_form,
    example_session_id,
    form_token,
    open_card_page,
)
from tollway.testing.migrations import revision, run_revision
from tollway.testing.processes import (
    GatewayProcess,
    WorkerProcess,
    deployment_settings,
    free_port,
)
from tollway.testing.products import (
    KeylessProductClient,
    ProductClient,
    ProductClientFactory,
    _ProductSettingsSpec,
    open_product_client,
    product_client,
    product_test_settings,
)
from tollway.testing.servers import (
    PostgresServer,
    RedisServer,
    WebSite,
    own_postgres,
    own_redis,
    webhook_certificate,
    webhook_receiver,
)
from tollway.webhooks.testing import Reply, WebhookTestReceiver

__all__ = [
    "BACKENDS",
    "CHROMIUM",
    "DECLINED_CARD",
    "GOOD_CARD",
    "POSTGRES_URL",
    "REDIS_URL",
    "Backend",
    "CardPageInBrowser",
    "GatewayFactory",
    "GatewayProcess",
    "HostedPageClient",
    "KeylessProductClient",
    "PostgresServer",
    "ProductClient",
    "ProductClientFactory",
    "RawAnswer",
    "RedisServer",
    "RenderedPage",
    "Reply",
    "Tenant",
    "WebSite",
    "WebhookTestReceiver",
    "WorkerProcess",
    "assert_card_form",
    "backend",
    "chromium",
    "chromium_launch_options",
    "create_postgres_database",
    "database_dump",
    "deployment_settings",
    "drop_postgres_database",
    "emitted",
    "example_session_id",
    "form_token",
    "free_port",
    "gateway_client",
    "gateway_factory",
    "open_card_page",
    "open_product_client",
    "own_postgres",
    "own_redis",
    "product_client",
    "product_test_settings",
    "raw_request",
    "redis_unreachable",
    "revision",
    "run_revision",
    "subscribe",
    "tenant",
    "unavailable",
    "webhook_certificate",
    "webhook_receiver",
]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(_ProductSettingsSpec)
