"""Testing one product: a gateway serving it, accounts subscribed to it with a key,
and HTTP clients on the app (``product_client``); the settings a product needs in
every test gateway of a whole-gateway run (the ``pytest_tollway_product_settings``
hook, which the contract and hostile-input tests ask)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol, Self

import httpx
import pytest

from tollway.gateway import Gateway
from tollway.registry import Product
from tollway.testing.backends import GatewayFactory
from tollway.testing.clients import BASE_URL, Tenant, app_transport, tenant


class _ProductSettingsSpec:
    """Added to pytest by the package's ``pytest_addhooks``."""

    @staticmethod
    @pytest.hookspec
    def pytest_tollway_product_settings(
        product: str, tmp_path_factory: pytest.TempPathFactory
    ) -> dict[str, Any] | None:
        """``[products.<product>.settings]`` the product needs in a test gateway, or
        ``None`` for another plugin's product."""


def product_test_settings(
    config: pytest.Config, product: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """What every ``pytest_tollway_product_settings`` implementation answers for
    ``product``, merged."""
    merged: dict[str, Any] = {}
    answers = config.hook.pytest_tollway_product_settings(
        product=product, tmp_path_factory=tmp_path_factory
    )
    for answer in reversed(answers):
        merged.update(answer)
    return merged


@dataclass(frozen=True)
class ProductClient:
    """A gateway serving ``product`` in-process, two accounts subscribed to it with a
    key each, and HTTP clients on its app."""

    gateway: Gateway
    product: Product
    plan: str
    """The plan ``owner`` and ``other`` are on."""
    scopes: tuple[str, ...]
    """The scopes their keys hold."""
    owner: Tenant
    other: Tenant
    """A second account like ``owner``'s: what it must not see of the owner's data."""
    client: httpx.AsyncClient
    """Sends ``owner``'s key with every request; ``headers=other.headers`` sends
    another's instead."""
    anonymous: httpx.AsyncClient
    """The same app, no key."""

    async def tenant(
        self,
        name: str,
        *,
        plan: str | None = None,
        scopes: Iterable[str] | None = None,
        admin: bool = False,
    ) -> Tenant:
        """Another account on the product and one key of it: ``owner``'s plan and
        scopes unless given."""
        plans = {self.product.name: plan or self.plan}
        held = self.scopes if scopes is None else scopes
        return await tenant(self.gateway, name, plans=plans, scopes=held, admin=admin)

    async def call(
        self, method: str, path: str, *, expect: int = 200, by: Tenant | None = None, **request: Any
    ) -> Any:
        """``method`` on ``path`` under the product's prefix with ``by``'s key (the
        owner's by default); asserts the status is ``expect`` and returns the JSON body
        (``None`` when empty). ``request`` goes to httpx (``json=``, ``params=``...)."""
        headers = {**(by or self.owner).headers, **request.pop("headers", {})}
        url = self.product.prefix + path
        response = await self.client.request(method, url, headers=headers, **request)
        assert response.status_code == expect, (
            f"{method} {url}: {response.status_code}, not {expect}: {response.text[:500]}"
        )
        return response.json() if response.content else None


@dataclass(frozen=True)
class KeylessProductClient:
    """A :class:`ProductClient` for tests that send keys themselves: ``client`` sends
    none. Product test helpers subclass it with the calls their tests repeat, and open
    it with :meth:`open`."""

    product_client: ProductClient

    @classmethod
    @asynccontextmanager
    async def open(
        cls, product_client: ProductClientFactory, product: str, **options: Any
    ) -> AsyncIterator[Self]:
        """``product_client(product, **options)`` as this class."""
        async with product_client(product, **options) as opened:
            yield cls(opened)

    async def call(
        self, method: str, path: str, *, expect: int = 200, by: Tenant | None = None, **request: Any
    ) -> Any:
        """:meth:`ProductClient.call`: ``by``'s key (the owner's by default)."""
        return await self.product_client.call(method, path, expect=expect, by=by, **request)

    @property
    def gateway(self) -> Gateway:
        return self.product_client.gateway

    @property
    def client(self) -> httpx.AsyncClient:
        """No key unless a request sends one (``headers=helper.owner.headers``)."""
        return self.product_client.anonymous

    @property
    def owner(self) -> Tenant:
        return self.product_client.owner

    @property
    def other(self) -> Tenant:
        return self.product_client.other


def _richest_plan(gateway: Gateway, product: str) -> str:
    plans = gateway.plans[product].values()
    return max(plans, key=lambda plan: plan.rank).name


def _scopes_of(gateway: Gateway, product: str) -> tuple[str, ...]:
    """Every scope the plugin registering ``product`` registered."""
    plugin = gateway.registry.owners[f"product:{product}"]
    return tuple(scope.name for scope in gateway.registry.scopes.values() if scope.plugin == plugin)


@asynccontextmanager
async def open_product_client(
    gateway: Gateway,
    product: str,
    *,
    plan: str | None = None,
    scopes: Iterable[str] | None = None,
    admin: bool = False,
    client_address: str = "127.0.0.1",
) -> AsyncIterator[ProductClient]:
    """A :class:`ProductClient` on a gateway already made: accounts ``acme`` (the
    owner) and ``globex`` on ``plan`` (the product's richest by default), keys holding
    ``scopes`` (every scope of the product's plugin by default); the app's lifespan
    runs around. Requests come from ``client_address``."""
    if product not in gateway.registry.products:
        loaded = ", ".join(sorted(gateway.registry.products)) or "none"
        raise LookupError(f"product {product!r} is not served by this gateway ({loaded})")
    chosen = plan or _richest_plan(gateway, product)
    held = tuple(scopes) if scopes is not None else _scopes_of(gateway, product)
    plans = {product: chosen}
    owner = await tenant(gateway, "acme", plans=plans, scopes=held, admin=admin)
    other = await tenant(gateway, "globex", plans=plans, scopes=held, admin=admin)
    async with (
        app_transport(gateway, client_address) as transport,
        httpx.AsyncClient(transport=transport, base_url=BASE_URL, headers=owner.headers) as keyed,
        httpx.AsyncClient(transport=transport, base_url=BASE_URL) as anonymous,
    ):
        described = gateway.registry.products[product]
        yield ProductClient(gateway, described, chosen, held, owner, other, keyed, anonymous)


class ProductClientFactory(Protocol):
    """The type of the ``product_client`` fixture."""

    def __call__(
        self,
        product: str,
        *,
        plan: str | None = None,
        scopes: Iterable[str] | None = None,
        admin: bool = False,
        settings: Mapping[str, Any] | None = None,
        plugins: Sequence[str] | None = None,
        client_address: str = "127.0.0.1",
        **gateway_settings: Any,
    ) -> AbstractAsyncContextManager[ProductClient]: ...


@pytest.fixture
def product_client(gateway_factory: GatewayFactory) -> ProductClientFactory:
    """``async with product_client("chat") as chat:`` a :class:`ProductClient` on a new
    gateway (one per backend, like ``gateway_factory``) loading only the plugin of the
    same name (or ``plugins=[...]``).

    ``settings`` are the product's own (``[products.<product>.settings]``, over any
    given in ``products=``); ``plan``, ``scopes``, ``admin`` and ``client_address`` are
    as :func:`open_product_client` takes them; any other keyword goes to
    ``gateway_factory`` (``products=``, ``extra_plugins=``, a gateway setting...).
    """

    @asynccontextmanager
    async def open_client(
        product: str,
        *,
        plan: str | None = None,
        scopes: Iterable[str] | None = None,
        admin: bool = False,
        settings: Mapping[str, Any] | None = None,
        plugins: Sequence[str] | None = None,
        client_address: str = "127.0.0.1",
        **gateway_settings: Any,
    ) -> AsyncIterator[ProductClient]:
        if settings:
            products = dict(gateway_settings.get("products") or {})
            configured = products.get(product) or {}
            merged = {**configured.get("settings", {}), **settings}
            products[product] = {**configured, "settings": merged}
            gateway_settings["products"] = products
        loaded = [product] if plugins is None else list(plugins)
        gateway = await gateway_factory(plugins=loaded, **gateway_settings)
        async with open_product_client(
            gateway, product, plan=plan, scopes=scopes, admin=admin, client_address=client_address
        ) as opened:
            yield opened

    return open_client
