"""Webhooks: signed, retried, at-least-once delivery of product events.

Products call ``gateway.webhooks.emit(session, account_id, event, data)`` inside the
transaction that makes the change; the developer API manages endpoints through the
other :class:`WebhookEngine` methods; receivers check deliveries with
:class:`WebhookReceiver` (or just :func:`verify_signature`).
"""

from tollway.webhooks.engine import (
    TEST_EVENT,
    DeliveryInfo,
    EndpointInfo,
    TestResult,
    WebhookEngine,
    WebhookError,
)
from tollway.webhooks.envelope import Envelope
from tollway.webhooks.receiver import (
    BadSignatureError,
    DuplicateWebhookError,
    StaleWebhookError,
    WebhookReceiver,
    WebhookVerificationError,
)
from tollway.webhooks.schedule import DEFAULT_RETRY_SCHEDULE
from tollway.webhooks.signing import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    HmacSha256Signer,
    WebhookSigner,
    sign_payload,
    verify_signature,
)

__all__ = [
    "DEFAULT_RETRY_SCHEDULE",
    "DELIVERY_HEADER",
    "EVENT_HEADER",
    "SIGNATURE_HEADER",
    "TEST_EVENT",
    "BadSignatureError",
    "DeliveryInfo",
    "DuplicateWebhookError",
    "EndpointInfo",
    "Envelope",
    "HmacSha256Signer",
    "StaleWebhookError",
    "TestResult",
    "WebhookEngine",
    "WebhookError",
    "WebhookReceiver",
    "WebhookSigner",
    "WebhookVerificationError",
    "sign_payload",
    "verify_signature",
]
