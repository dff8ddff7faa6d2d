"""Webhook defaults: the HMAC-SHA256 signer, the webhook tables and the test event.

The tables' migrations are revision ``0002_webhooks`` of the core's ``tollway``
branch, so they need no folder of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import MetaData

from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl
from tollway.webhooks import TEST_EVENT, HmacSha256Signer, WebhookSigner
from tollway.webhooks.models import WebhooksBase


@hookimpl(trylast=True)
def tollway_webhook_signer(gateway: Gateway) -> WebhookSigner:
    return HmacSha256Signer()


@hookimpl
def tollway_register_events(register: Callable[[str, str], None]) -> None:
    register(TEST_EVENT, "A test event sent from the developer API")


@hookimpl
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    register(WebhooksBase.metadata, None)
