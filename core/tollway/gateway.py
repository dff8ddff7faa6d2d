"""The gateway: settings, loaded plugins, what they registered and the mechanisms.

One object holds everything a plugin may need (``gateway.database``, ``.accounts``,
``.jobs``, ``.live``, ``.settings`` ...). It is built once per process; ``tollway.app``
turns it into a Litestar application.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import msgspec
import pluggy

from tollway.accounts import Accounts
from tollway.admission.customers import CustomerTokens
from tollway.auth import KeyAuthenticator
from tollway.billing.engine import BillingEngine
from tollway.billing.processor import PaymentProcessor
from tollway.db import Database
from tollway.db.migrate import upgrade
from tollway.errors import ErrorMapper
from tollway.geoip import GeoIP
from tollway.hookspecs import RouteRegistrar
from tollway.jobs import JobFunction, JobQueue
from tollway.live import LiveBus, live_bus
from tollway.observability.metrics import GatewayMetrics
from tollway.plans import resolve_plans
from tollway.plugins import call_each, collect, collect_models, plugin_manager
from tollway.ratelimit import RateLimiter
from tollway.registry import Plan, RegistrationError, Registry
from tollway.scopes import ScopeChecker
from tollway.secrets import deployment_secret
from tollway.settings import Settings
from tollway.webhooks import WebhookEngine, WebhookSigner

log = logging.getLogger("tollway")

T = TypeVar("T")
S = TypeVar("S", bound=msgspec.Struct)


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
        self._product_settings = product_settings(self.registry, settings)
        self.database = Database(settings.database_url)
        hook = self.plugins.hook
        self.authenticator: KeyAuthenticator = _required(
            hook.tollway_key_authenticator(gateway=self), "key authenticator"
        )
        self.accounts = Accounts(
            self.database, self.registry, self.plans, self.billing, self.authenticator
        )
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
        self.live: LiveBus = live_bus(settings)
        self.webhooks = WebhookEngine(self)
        self._customer_tokens: CustomerTokens | None = None
        self._services: dict[type, object] = {}
        self._running = False
        call_each(hook.tollway_register_services, self._service_adder, gateway=self)
        call_each(hook.tollway_register_jobs, self._job_adder, gateway=self)
        call_each(hook.tollway_register_routes, self._route_adder)
        call_each(hook.tollway_register_hosts, self._host_adder, gateway=self)

    def service(self, kind: type[T]) -> T:
        """The gateway's one instance of a service class a plugin registered."""
        try:
            found = self._services[kind]
        except KeyError:
            raise LookupError(f"no plugin registered a {kind.__name__} service") from None
        return found  # type: ignore[return-value]  # stored under its own class

    @functools.cached_property
    def geoip(self) -> GeoIP:
        """The country lookup (``tollway_geoip``), resolved on first use: a gateway
        whose products never ask loads no country database."""
        geoip: GeoIP = _required(self.plugins.hook.tollway_geoip(gateway=self), "GeoIP lookup")
        return geoip

    @functools.cached_property
    def payments(self) -> PaymentProcessor:
        """The payment processor (``tollway_payment_processor``), resolved on first
        use: a gateway selling nothing never makes one."""
        processor: PaymentProcessor = _required(
            self.plugins.hook.tollway_payment_processor(gateway=self), "payment processor"
        )
        return processor

    @functools.cached_property
    def billing(self) -> BillingEngine:
        """The billing engine products with subscriptions build on (one per gateway)."""
        return BillingEngine(self)

    def product_settings(self, kind: type[S]) -> S:
        """A product's settings, as the Struct its plugin registered, validated."""
        for value in self._product_settings.values():
            if type(value) is kind:
                return value
        raise LookupError(f"no product registered settings of type {kind.__name__}")

    async def customer_tokens(self) -> CustomerTokens:
        """The deployment's customer token issuer and verifier (its secret is made
        once, in the database, and shared by every process)."""
        if self._customer_tokens is None:
            secret = await deployment_secret(self.database, "customer_tokens")
            self._customer_tokens = CustomerTokens(secret)
        return self._customer_tokens

    def _service_adder(self, plugin: str) -> Callable[[object], None]:
        def add(service: object) -> None:
            kind = type(service)
            self.registry._claim("service", f"{kind.__module__}.{kind.__qualname__}", plugin)
            self._services[kind] = service

        return add

    def _job_adder(self, plugin: str) -> Callable[[str, JobFunction], None]:
        def add(name: str, function: JobFunction) -> None:
            self.registry.add_job(name, function, plugin=plugin)
            self.jobs.register(name, function)

        return add

    def _route_adder(self, plugin: str) -> RouteRegistrar:
        def add(
            product: str,
            handlers: Sequence[Any],
            *,
            dependencies: Mapping[str, Callable[..., Any]] | None = None,
        ) -> None:
            self.registry.add_routes(product, handlers, dependencies=dependencies, plugin=plugin)

        return add

    def _host_adder(self, plugin: str) -> Callable[[str, str], None]:
        def add(host: str, prefix: str) -> None:
            self.registry.add_host(host, prefix, plugin=plugin)

        return add

    async def migrate(self) -> None:
        """Apply the migration branch of every installed plugin (``upgrade heads``).

        Plugins left out by the allow-list are migrated too: a plugin's tables must not
        depend on which products one process happens to serve.
        """
        models = self.registry.models
        if self.settings.plugins is not None:
            models = collect_models(plugin_manager(None, self._extra_plugins))
        await upgrade(self.database, models)

    async def start(self) -> None:
        """Start the real-time bus, the jobs, the webhook dispatcher, the plugins'
        services and startup hooks. A start that fails stops what it had started before
        the error goes on: a gateway that did not start leaves nothing running. A
        gateway runs once at a time: a second start (two app lifespans on one gateway)
        would orphan the first start's workers, so it is refused."""
        if self._running:
            raise RuntimeError("this gateway is already running; stop it before starting it again")
        async with AsyncExitStack() as started:
            await self.live.start()
            started.push_async_callback(self.live.stop)
            await self.jobs.start()
            started.push_async_callback(self.jobs.stop)
            await self.webhooks.start()
            started.push_async_callback(self.webhooks.stop)
            for service in self._services.values():
                if callable(start := getattr(service, "start", None)):
                    await start()
                if callable(stop := getattr(service, "stop", None)):
                    started.push_async_callback(stop)
            await _await_all(self.plugins.hook.tollway_startup(gateway=self))
            started.pop_all()  # running: stop() ends it
        self._running = True

    async def stop(self) -> None:
        """Stop everything :meth:`start` started and release the connections, each
        part even when another fails (the first failure is raised afterwards)."""
        self._running = False
        steps: list[Callable[[], Awaitable[Any]]] = [
            lambda: _await_all(self.plugins.hook.tollway_shutdown(gateway=self))
        ]
        for service in reversed(self._services.values()):
            if callable(stop := getattr(service, "stop", None)):
                steps.append(stop)
        # The bus after the jobs: a job still running may publish.
        steps += [self.webhooks.stop, self.jobs.stop, self.live.stop, self.rate_limiter.close]
        steps.append(self.database.dispose)
        failures: list[Exception] = []
        for step in steps:
            try:
                await step()
            except Exception as error:
                log.exception("stopping the gateway: %s failed", getattr(step, "__qualname__", ""))
                failures.append(error)
        if failures:
            raise failures[0]


def product_settings(registry: Registry, settings: Settings) -> dict[str, msgspec.Struct]:
    """Each served product's ``[products.<name>.settings]``, converted into the Struct
    its plugin registered; ``ValueError`` naming the table and the key otherwise."""
    converted: dict[str, msgspec.Struct] = {}
    for name in registry.products:
        values = settings.product(name).settings
        registered = registry.settings.get(name)
        if registered is None:
            if values:
                raise ValueError(
                    f"[products.{name}.settings]: the {name!r} product has no settings "
                    f"(found {', '.join(sorted(values))})"
                )
            continue
        converted[name] = settings.product_settings(name, registered.struct)
    return converted


def _required(value: T | None, what: str) -> T:
    if value is None:
        raise RegistrationError(f"no plugin provides a {what}")
    return value


async def _await_all(results: list[Any]) -> None:
    awaitables = [result for result in results if inspect.isawaitable(result)]
    try:
        for result in awaitables:
            await result
    finally:
        # After a failure, the hooks not yet awaited are closed, not left to warn.
        for result in awaitables:
            if inspect.iscoroutine(result):
                result.close()
