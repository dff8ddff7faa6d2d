"""Default webhook signer: HMAC-SHA256 of the raw body."""

from __future__ import annotations

from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl
from tollway.webhooks import HmacSha256Signer, WebhookSigner


@hookimpl(trylast=True)
def tollway_webhook_signer(gateway: Gateway) -> WebhookSigner:
    return HmacSha256Signer()
