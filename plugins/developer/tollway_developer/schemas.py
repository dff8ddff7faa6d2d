"""Wire types (msgspec Structs) of the developer product.

Request structs forbid unknown fields and carry their constraints as ``msgspec.Meta``
annotations; rules the schema cannot express (registered scopes and events, reachable
HTTPS hosts) are checked by ``tollway.accounts`` and the webhook engine. Lists are
``{data, total, page}``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec

__all__ = [
    "ApiKey",
    "ApiKeyCreate",
    "ApiKeyList",
    "CatalogEntry",
    "CatalogList",
    "CreatedApiKey",
    "CreatedWebhook",
    "Delivery",
    "DeliveryList",
    "Webhook",
    "WebhookCreate",
    "WebhookList",
    "WebhookSecret",
    "WebhookTestResult",
]

ScopeName = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
EventName = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class ApiKeyCreate(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/developer/api-keys``."""

    name: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    """Not blank; stored without surrounding whitespace."""
    scopes: Annotated[list[ScopeName], msgspec.Meta(max_length=200)]
    """Registered scopes only; may be empty only for an admin key."""
    is_admin: bool = False
    expires_in_days: Annotated[int, msgspec.Meta(ge=1, le=3650)] | None = None
    """``None``: the key never expires."""


class ApiKey(msgspec.Struct):
    """A key as listings show it: the prefix, never the secret."""

    id: int
    prefix: str
    name: str
    scopes: list[str]
    is_admin: bool
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None


class CreatedApiKey(ApiKey):
    """Body of a key creation: ``key`` is shown this once."""

    key: str


class ApiKeyList(msgspec.Struct):
    data: list[ApiKey]
    total: int
    page: int


class CatalogEntry(msgspec.Struct, omit_defaults=True):
    """A registered scope or event; ``product`` is the product of the plugin that
    registered it, omitted when that plugin serves no single product."""

    name: str
    description: str
    product: str | None = None


class CatalogList(msgspec.Struct):
    data: list[CatalogEntry]
    total: int
    page: int


class WebhookCreate(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/developer/webhooks``."""

    url: Annotated[str, msgspec.Meta(min_length=1, max_length=2048)]
    """An ``https://`` URL whose host resolves to public addresses only."""
    events: Annotated[list[EventName], msgspec.Meta(min_length=1, max_length=200)]
    """Registered event names (``GET /v1/developer/events``)."""
    description: Annotated[str, msgspec.Meta(max_length=500)] = ""


class Webhook(msgspec.Struct):
    """A registered webhook endpoint; the signing secret only by its prefix."""

    id: int
    url: str
    events: list[str]
    description: str
    is_active: bool
    disabled_reason: str | None
    created_at: datetime
    secret_prefix: str


class CreatedWebhook(Webhook):
    """Body of a registration: ``secret`` (the HMAC signing secret) is shown this once."""

    secret: str


class WebhookList(msgspec.Struct):
    data: list[Webhook]
    total: int
    page: int


class WebhookSecret(msgspec.Struct):
    """Body of a secret rotation: the new ``secret``, shown this once."""

    id: int
    secret: str


class WebhookTestResult(msgspec.Struct):
    """What the receiver answered to the test event (``succeeded``: a 2xx in time)."""

    delivery_id: str
    status_code: int | None
    latency_ms: int
    error: str | None
    succeeded: bool


class Delivery(msgspec.Struct):
    """One event's delivery to an endpoint, with its latest attempt."""

    id: str
    event_id: str
    event: str
    status: str
    attempts: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    last_latency_ms: int | None
    created_at: datetime
    delivered_at: datetime | None


class DeliveryList(msgspec.Struct):
    data: list[Delivery]
    total: int
    page: int
