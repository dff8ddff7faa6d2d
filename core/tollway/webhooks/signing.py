"""Webhook signing: ``X-Service-Signature: sha256=<hex HMAC-SHA256 of the raw body>``.

Receivers verify with :func:`verify_signature`, which compares in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Protocol

SIGNATURE_HEADER = "X-Service-Signature"
EVENT_HEADER = "X-Service-Event"
DELIVERY_HEADER = "X-Service-Delivery"
"""The delivery id: differs between deliveries of one event (the body's ``id`` does not)."""
_SCHEME = "sha256="


class WebhookSigner(Protocol):
    header: str

    def sign(self, secret: str, body: bytes) -> str:
        """The signature header value for ``body`` under ``secret``."""
        ...


def sign_payload(secret: str, body: bytes) -> str:
    """``sha256=<hex>`` of the HMAC-SHA256 of ``body`` keyed by ``secret`` (UTF-8)."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return _SCHEME + digest


def verify_signature(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is the signature of the exact raw ``body`` under ``secret``.

    Pass the body bytes as received, before any JSON parsing: re-serialising changes
    bytes and breaks the signature.
    """
    if not header or not header.startswith(_SCHEME):
        return False
    return hmac.compare_digest(sign_payload(secret, body), header.strip())


class HmacSha256Signer:
    """The default signer; the header name is fixed by the spec."""

    header = SIGNATURE_HEADER

    def sign(self, secret: str, body: bytes) -> str:
        return sign_payload(secret, body)
