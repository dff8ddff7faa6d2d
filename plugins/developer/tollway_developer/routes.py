"""HTTP handlers of the developer product: API keys (admin keys only), webhook
endpoints (scope ``webhooks:manage``) and the public scope and event catalogs.

Keys are kept by ``gateway.accounts`` and webhook endpoints by ``gateway.webhooks``;
both take the caller's account id, so another account's id is simply not found. What
they refuse (``AccountError``, ``WebhookError``) answers with its own status and message.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Annotated, Protocol, TypeVar

import msgspec
from litestar import delete, get, post
from litestar.params import JSONBody, PathParameter

from tollway import (
    BadRequest,
    Conflict,
    CurrentCaller,
    CurrentGateway,
    EndpointInfo,
    Id,
    NotFound,
    Page,
    Registry,
    offset,
    page_limit,
)
from tollway_developer.product import WEBHOOKS_SCOPE
from tollway_developer.schemas import (
    ApiKey,
    ApiKeyCreate,
    ApiKeyList,
    CatalogEntry,
    CatalogList,
    CreatedApiKey,
    CreatedWebhook,
    Delivery,
    DeliveryList,
    Webhook,
    WebhookCreate,
    WebhookList,
    WebhookSecret,
    WebhookTestResult,
)

Limit = Annotated[int, page_limit(100)]
DeliveryId = Annotated[str, PathParameter(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]

T = TypeVar("T")


def _page(items: Sequence[T], page: int, limit: int) -> list[T]:
    start = offset(page, limit)
    return list(items[start : start + limit])


def _text(value: str, field: str) -> str:
    """``value``, if the database can store it (PostgreSQL text cannot hold NUL)."""
    if "\x00" in value:
        raise BadRequest(f"Invalid request body: {field} must not contain NUL characters")
    return value


# API keys ---------------------------------------------------------------------------


@get("/api-keys", admin=True)
async def list_api_keys(
    caller: CurrentCaller, gateway: CurrentGateway, page: Page = 1, limit: Limit = 20
) -> ApiKeyList:
    """The account's unrevoked keys, oldest first, by prefix only."""
    keys, total = await gateway.accounts.unrevoked_key_page(
        caller.principal.account_id, offset=offset(page, limit), limit=limit
    )
    data = [msgspec.convert(key, ApiKey, from_attributes=True) for key in keys]
    return ApiKeyList(data=data, total=total, page=page)


@post("/api-keys", admin=True)
async def create_api_key(
    data: JSONBody[ApiKeyCreate], caller: CurrentCaller, gateway: CurrentGateway
) -> CreatedApiKey:
    """A new key of the caller's account; the full key is in this response only."""
    name = _text(data.name, "name").strip()
    if not name:
        raise BadRequest("Cannot create API key: name must not be blank")
    expires_in = timedelta(days=data.expires_in_days) if data.expires_in_days else None
    created = await gateway.accounts.create_key(
        caller.principal.account_id,
        name=name,
        scopes=data.scopes,
        admin=data.is_admin,
        expires_in=expires_in,
    )
    return CreatedApiKey(
        id=created.id,
        prefix=created.prefix,
        name=created.name,
        scopes=list(created.scopes),
        is_admin=created.is_admin,
        created_at=created.created_at,
        last_used_at=None,
        expires_at=created.expires_at,
        key=created.key,
    )


@delete("/api-keys/{key_id:int}", admin=True)
async def revoke_api_key(key_id: Id, caller: CurrentCaller, gateway: CurrentGateway) -> None:
    """Revoke at once on this process, within ``key_cache_ttl`` on the others."""
    principal = caller.principal
    if key_id == principal.key_id:
        # Revoking the only admin key would leave the account unmanageable over the API.
        raise Conflict("An API key cannot revoke itself; revoke it with another admin key")
    if not await gateway.accounts.revoke_key(key_id, account_id=principal.account_id):
        raise NotFound(f"API key {key_id} not found")


# Webhook endpoints ------------------------------------------------------------------


def _endpoint_not_found(webhook_id: int) -> NotFound:
    return NotFound(f"Webhook endpoint {webhook_id} not found")


def _webhook(endpoint: EndpointInfo) -> Webhook:
    return msgspec.convert(endpoint, Webhook, from_attributes=True)


@get("/webhooks", scope=WEBHOOKS_SCOPE)
async def list_webhooks(
    caller: CurrentCaller, gateway: CurrentGateway, page: Page = 1, limit: Limit = 20
) -> WebhookList:
    """The account's endpoints, oldest first, without their secrets."""
    endpoints, total = await gateway.webhooks.list_endpoints(
        caller.principal.account_id, offset=offset(page, limit), limit=limit
    )
    return WebhookList(data=[_webhook(endpoint) for endpoint in endpoints], total=total, page=page)


@post("/webhooks", scope=WEBHOOKS_SCOPE)
async def register_webhook(
    data: JSONBody[WebhookCreate], caller: CurrentCaller, gateway: CurrentGateway
) -> CreatedWebhook:
    """A new endpoint; its signing secret is in this response only."""
    endpoint, secret = await gateway.webhooks.register_endpoint(
        caller.principal.account_id, data.url, data.events, _text(data.description, "description")
    )
    return CreatedWebhook(**msgspec.structs.asdict(_webhook(endpoint)), secret=secret)


@delete("/webhooks/{webhook_id:int}", scope=WEBHOOKS_SCOPE)
async def delete_webhook(webhook_id: Id, caller: CurrentCaller, gateway: CurrentGateway) -> None:
    if not await gateway.webhooks.delete_endpoint(caller.principal.account_id, webhook_id):
        raise _endpoint_not_found(webhook_id)


@post("/webhooks/{webhook_id:int}/test", scope=WEBHOOKS_SCOPE, status_code=200)
async def send_test_event(
    webhook_id: Id, caller: CurrentCaller, gateway: CurrentGateway
) -> WebhookTestResult:
    """Deliver a ``webhook.test`` event now and report what the receiver answered."""
    result = await gateway.webhooks.send_test(caller.principal.account_id, webhook_id)
    if result is None:
        raise _endpoint_not_found(webhook_id)
    return msgspec.convert(result, WebhookTestResult, from_attributes=True)


@post("/webhooks/{webhook_id:int}/rotate-secret", scope=WEBHOOKS_SCOPE, status_code=200)
async def rotate_webhook_secret(
    webhook_id: Id, caller: CurrentCaller, gateway: CurrentGateway
) -> WebhookSecret:
    """A new signing secret, used from the next attempt on; shown this once."""
    secret = await gateway.webhooks.rotate_secret(caller.principal.account_id, webhook_id)
    if secret is None:
        raise _endpoint_not_found(webhook_id)
    return WebhookSecret(id=webhook_id, secret=secret)


@get("/webhooks/{webhook_id:int}/deliveries", scope=WEBHOOKS_SCOPE)
async def list_webhook_deliveries(
    webhook_id: Id,
    caller: CurrentCaller,
    gateway: CurrentGateway,
    page: Page = 1,
    limit: Limit = 20,
) -> DeliveryList:
    """The endpoint's deliveries, newest first, with their latest attempt."""
    found = await gateway.webhooks.list_deliveries(
        caller.principal.account_id, webhook_id, offset=offset(page, limit), limit=limit
    )
    if found is None:
        raise _endpoint_not_found(webhook_id)
    deliveries, total = found
    data = [msgspec.convert(delivery, Delivery, from_attributes=True) for delivery in deliveries]
    return DeliveryList(data=data, total=total, page=page)


@post(
    "/webhooks/{webhook_id:int}/deliveries/{delivery_id:str}/redeliver",
    scope=WEBHOOKS_SCOPE,
    status_code=202,
)
async def redeliver_webhook_delivery(
    webhook_id: Id, delivery_id: DeliveryId, caller: CurrentCaller, gateway: CurrentGateway
) -> Delivery:
    """Queue the delivery's event again (same event id, so receivers deduplicate); a
    disabled endpoint is a 409."""
    delivery = await gateway.webhooks.redeliver(
        caller.principal.account_id, webhook_id, delivery_id
    )
    if delivery is None:
        raise NotFound(f"Delivery {delivery_id} of webhook endpoint {webhook_id} not found")
    return msgspec.convert(delivery, Delivery, from_attributes=True)


# Catalogs ---------------------------------------------------------------------------


class _Registered(Protocol):
    """A registered scope or event (``Registry.scopes``, ``Registry.events``) and the
    plugin that registered it."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def plugin(self) -> str: ...


def _product_of_plugin(registry: Registry) -> dict[str, str]:
    """Plugin name -> the product it registered, for plugins that registered one."""
    products: dict[str, list[str]] = {}
    for owned, plugin in registry.owners.items():
        kind, _, name = owned.partition(":")
        if kind == "product":
            products.setdefault(plugin, []).append(name)
    return {plugin: names[0] for plugin, names in products.items() if len(names) == 1}


def _catalog(
    items: Iterable[_Registered], registry: Registry, page: int, limit: int
) -> CatalogList:
    product_of = _product_of_plugin(registry)
    entries = sorted(
        (CatalogEntry(item.name, item.description, product_of.get(item.plugin)) for item in items),
        key=lambda entry: entry.name,
    )
    return CatalogList(data=_page(entries, page, limit), total=len(entries), page=page)


@get("/scopes", public=True)
async def list_scopes(gateway: CurrentGateway, page: Page = 1, limit: Limit = 100) -> CatalogList:
    """Every scope a key can be given, from the installed plugins."""
    registry = gateway.registry
    return _catalog(registry.scopes.values(), registry, page, limit)


@get("/events", public=True)
async def list_events(gateway: CurrentGateway, page: Page = 1, limit: Limit = 100) -> CatalogList:
    """Every event type a webhook endpoint can subscribe to."""
    registry = gateway.registry
    return _catalog(registry.events.values(), registry, page, limit)


ROUTES = [
    list_api_keys,
    create_api_key,
    revoke_api_key,
    list_webhooks,
    register_webhook,
    delete_webhook,
    send_test_event,
    rotate_webhook_secret,
    list_webhook_deliveries,
    redeliver_webhook_delivery,
    list_scopes,
    list_events,
]
