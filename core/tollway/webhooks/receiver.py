"""What a receiver runs on each delivery: signature, freshness and duplicate checks."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from tollway.webhooks.envelope import Envelope
from tollway.webhooks.signing import SIGNATURE_HEADER, verify_signature

DEFAULT_TOLERANCE = 12 * 3600.0
"""Seconds an event stays acceptable after its ``created_at``. Retries keep the
event's ``created_at``, so the tolerance must cover the sender's retry span (about
10 h 43 min with the default schedule) or late retries are refused as stale."""


class WebhookVerificationError(ValueError):
    """A delivery that must not be processed; the message says why."""


class BadSignatureError(WebhookVerificationError):
    """The signature header is missing or does not match the raw body."""


class StaleWebhookError(WebhookVerificationError):
    """``created_at`` is further from now than the tolerance (a replay, or a clock
    off by that much)."""


class DuplicateWebhookError(WebhookVerificationError):
    """This event id was verified before. Answer 2xx: the sender is retrying an event
    already processed, and an error would make it retry again."""


class WebhookReceiver:
    """Verifies deliveries for one endpoint secret and remembers the event ids seen.

    ``verify(body, headers)`` checks, in order, the ``X-Service-Signature`` of the raw
    body, that ``created_at`` is within ``tolerance`` seconds of now, and that the
    event id is new; it returns the decoded body or raises a
    :class:`WebhookVerificationError` subclass. Memory stays bounded: ids older than
    the tolerance are forgotten (a replay of them is stale anyway), and at most
    ``max_remembered`` ids are kept. If processing a verified event fails, call
    :meth:`forget` so the sender's retry is not refused as a duplicate.
    """

    def __init__(
        self,
        secret: str,
        tolerance: float = DEFAULT_TOLERANCE,
        *,
        max_remembered: int = 100_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret
        self._tolerance = tolerance
        self._max_remembered = max_remembered
        self._clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()
        """event id -> created_at (epoch seconds), oldest first."""

    def verify(self, body: bytes, headers: Mapping[str, str]) -> dict[str, Any]:
        signature = next(
            (value for name, value in headers.items() if name.lower() == SIGNATURE_HEADER.lower()),
            None,
        )
        if not verify_signature(self._secret, body, signature):
            raise BadSignatureError(f"{SIGNATURE_HEADER} does not match the body")
        try:
            envelope = msgspec.json.decode(body, type=Envelope)
        except msgspec.DecodeError as error:
            raise WebhookVerificationError(f"malformed webhook body: {error}") from None
        now = self._clock()
        created = envelope.created_at.timestamp()
        if abs(now - created) > self._tolerance:
            raise StaleWebhookError(
                f"event {envelope.id} was created {now - created:.0f} s ago; "
                f"tolerance is {self._tolerance:.0f} s"
            )
        self._forget_older_than(now - self._tolerance)
        if envelope.id in self._seen:
            raise DuplicateWebhookError(f"event {envelope.id} was already received")
        self._seen[envelope.id] = created
        while len(self._seen) > self._max_remembered:
            self._seen.popitem(last=False)
        decoded: dict[str, Any] = msgspec.json.decode(body)
        return decoded

    def forget(self, event_id: str) -> None:
        """Accept ``event_id`` again (its processing failed and will be retried)."""
        self._seen.pop(event_id, None)

    def _forget_older_than(self, cutoff: float) -> None:
        # Ids arrive roughly in created_at order, so the old ones sit at the front;
        # stop at the first recent one rather than scan everything.
        while self._seen:
            oldest_id, created = next(iter(self._seen.items()))
            if created >= cutoff:
                return
            del self._seen[oldest_id]
