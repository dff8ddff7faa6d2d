"""The gateway: settings, loaded plugins, what they registered and the mechanisms.

One object holds everything a plugin may need (``gateway.database``, ``.accounts``,
``.jobs``, ``.settings`` ...). It is built once per process; ``tollway.app`` turns it
into a Litestar application.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any, TypeVar

import pluggy

from tollway.accounts import Accounts
from tollway.auth import KeyAuthenticator
from tollway.db import Database
from tollway.db.migrate import upgrade
from tollway.errors import ErrorMapper
from tollway.jobs import JobQueue
from tollway.observability.metrics import GatewayMetrics
from tollway.plans import resolve_plans
from tollway.plugins import call_each, collect, plugin_manager
from tollway.ratelimit import RateLimiter
from tollway.registry import Plan, RegistrationError, Registry
from tollway.scopes import ScopeChecker
from tollway.settings import Settings
from tollway.webhooks import WebhookEngine, WebhookSigner

T = TypeVar("T")


class Gateway:
    """Everything one gateway process runs with."""

    def __init__(
        self,
        settings: Settings,
        *,
        manager: pluggy.PluginManager | None = None,
        extra_plugins: Iterable[tuple[str, object]] = (),
    ) -> None:
        self.settings = settings
        self._extra_plugins = tuple(extra_plugins)
        self.plugins = manager or plugin_manager(settings.plugins, self._extra_plugins)
        self.registry: Registry = collect(self.plugins)
        self.plans: dict[str, dict[str, Plan]] = resolve_plans(self.registry, settings)
        self.database = Database(settings.database_url)
        hook = self.plugins.hook
        self.authenticator: KeyAuthenticator = _required(
            hook.tollway_key_authenticator(gateway=self), "key authenticator"
        )
        self.accounts = Accounts(self.database, self.registry, self.plans, self.authenticator)
        self.scope_checker: ScopeChecker = _required(
            hook.tollway_scope_checker(gateway=self), "scope checker"
        )
        self.rate_limiter: RateLimiter = _required(
            hook.tollway_rate_limiter(gateway=self), "rate limiter"
        )
        self.webhook_signer: WebhookSigner = _required(
            hook.tollway_webhook_signer(gateway=self), "webhook signer"
        )
        self.error_mapper: ErrorMapper = _required(
            hook.tollway_error_mapper(gateway=self), "error mapper"
        )
        self.jobs: JobQueue = _required(hook.tollway_job_queue(gateway=self), "job queue")
        self.metrics = GatewayMetrics(self.jobs)
        self.webhooks = WebhookEngine(self)
        call_each(
            hook.tollway_register_routes,
            lambda plugin: (
                lambda product, handlers: self.registry.add_routes(product, handlers, plugin=plugin)
            ),
            gateway=self,
        )

    async def migrate(self) -> None:
        """Apply the migration branch of every installed plugin (``upgrade heads``).

        Plugins left out by the allow-list are migrated too: a plugin's tables must not
        depend on which products one process happens to serve.
        """
        models = self.registry.models
        if self.settings.plugins is not None:
            models = collect(plugin_manager(None, self._extra_plugins)).models
        await upgrade(self.database, models)

    async def start(self) -> None:
        await self.jobs.start()
        await self.webhooks.start()
        await _await_all(self.plugins.hook.tollway_startup(gateway=self))

    async def stop(self) -> None:
        await _await_all(self.plugins.hook.tollway_shutdown(gateway=self))
        await self.webhooks.stop()
        await self.jobs.stop()
        await self.rate_limiter.close()
        await self.database.dispose()


def _required(value: T | None, what: str) -> T:
    if value is None:
        raise RegistrationError(f"no plugin provides a {what}")
    return value


async def _await_all(results: list[Any]) -> None:
    for result in results:
        if inspect.isawaitable(result):
            await result
