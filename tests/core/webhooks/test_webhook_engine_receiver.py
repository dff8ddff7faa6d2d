"""The receivers' helper and the retry schedule, without a network."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import msgspec
import pytest

from tollway.webhooks import (
    DEFAULT_RETRY_SCHEDULE,
    BadSignatureError,
    DuplicateWebhookError,
    Envelope,
    StaleWebhookError,
    WebhookReceiver,
    WebhookVerificationError,
    sign_payload,
)
from tollway.webhooks.schedule import RETRY_AFTER_CAP, parse_retry_after, retry_delay

SECRET = "whsec_test"
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def _delivery(event_id: str = "evt_1", age: float = 0.0) -> tuple[bytes, dict[str, str]]:
    created = NOW - timedelta(seconds=age)
    body = msgspec.json.encode(Envelope(event_id, "order.paid", created, {"order": 1}))
    return body, {"x-service-signature": sign_payload(SECRET, body)}


def _receiver(tolerance: float = 300, **options: int) -> WebhookReceiver:
    return WebhookReceiver(SECRET, tolerance, clock=NOW.timestamp, **options)


def test_a_good_delivery_is_returned_decoded() -> None:
    body, headers = _delivery()
    payload = _receiver().verify(body, {"X-Service-Signature": headers["x-service-signature"]})
    assert payload == {
        "id": "evt_1",
        "event": "order.paid",
        "created_at": "2026-11-22T12:00:00Z",
        "data": {"order": 1},
    }


@pytest.mark.parametrize(
    "headers",
    [{}, {"X-Service-Signature": sign_payload("whsec_other", b"{}")}],
    ids=["missing", "wrong"],
)
def test_a_bad_signature_is_refused(headers: dict[str, str]) -> None:
    body, _ = _delivery()
    with pytest.raises(BadSignatureError, match="does not match"):
        _receiver().verify(body, headers)


def test_a_tampered_body_is_refused() -> None:
    body, headers = _delivery()
    with pytest.raises(BadSignatureError):
        _receiver().verify(body.replace(b'"order":1', b'"order":2'), headers)


@pytest.mark.parametrize("age", [301, -301])
def test_an_event_outside_the_tolerance_is_stale(age: float) -> None:
    body, headers = _delivery(age=age)
    with pytest.raises(StaleWebhookError, match="tolerance is 300 s"):
        _receiver().verify(body, headers)
    assert _receiver(tolerance=400).verify(body, headers)["id"] == "evt_1"


def test_a_repeated_event_id_is_a_duplicate_until_forgotten() -> None:
    receiver = _receiver()
    body, headers = _delivery()
    receiver.verify(body, headers)
    with pytest.raises(DuplicateWebhookError, match="evt_1 was already received"):
        receiver.verify(body, headers)
    receiver.forget("evt_1")
    assert receiver.verify(body, headers)["id"] == "evt_1"


def test_memory_is_bounded() -> None:
    receiver = _receiver(max_remembered=3)
    for number in range(5):
        receiver.verify(*_delivery(f"evt_{number}"))
    receiver.verify(*_delivery("evt_0"))  # forgotten to stay within the bound
    with pytest.raises(DuplicateWebhookError):
        receiver.verify(*_delivery("evt_4"))


def test_a_malformed_body_is_refused() -> None:
    body = b'{"id": "evt_1"}'
    with pytest.raises(WebhookVerificationError, match="malformed"):
        _receiver().verify(body, {"X-Service-Signature": sign_payload(SECRET, body)})


def test_the_default_schedule_spans_hours() -> None:
    assert DEFAULT_RETRY_SCHEDULE == (0, 30, 120, 600, 1800, 3600, 10800, 21600)
    delays = [retry_delay(DEFAULT_RETRY_SCHEDULE, attempts) for attempts in range(1, 9)]
    assert delays == [30, 120, 600, 1800, 3600, 10800, 21600, None]


def test_retry_after_postpones_never_hastens_and_is_capped() -> None:
    assert retry_delay((0, 30, 60), 1, retry_after=5) == 30
    assert retry_delay((0, 30, 60), 1, retry_after=90) == 90
    assert retry_delay((0, 30, 60), 1, retry_after=10**9) == RETRY_AFTER_CAP
    assert retry_delay((0, 30, 60), 3, retry_after=5) is None


def test_retry_after_is_read_as_seconds_or_an_http_date() -> None:
    assert parse_retry_after("120") == 120
    later = NOW + timedelta(seconds=90)
    assert parse_retry_after(format_datetime(later, usegmt=True), now=NOW) == 90
    assert parse_retry_after(format_datetime(NOW - timedelta(1), usegmt=True), now=NOW) == 0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
