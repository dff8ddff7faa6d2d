"""The default webhook signer and the receivers' verify helper."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from tollway import verify_signature
from tollway.webhooks import HmacSha256Signer, sign_payload

BODY = b'{"id":"evt_1","event":"invoice.paid","created_at":"2026-11-22T00:00:00Z","data":{}}'


def test_signature_is_hmac_sha256_of_the_raw_body() -> None:
    expected = hmac.new(b"whsec_test", BODY, hashlib.sha256).hexdigest()
    assert sign_payload("whsec_test", BODY) == f"sha256={expected}"
    signer = HmacSha256Signer()
    assert signer.header == "X-Service-Signature"
    assert signer.sign("whsec_test", BODY) == f"sha256={expected}"


def test_verify_accepts_the_right_signature() -> None:
    assert verify_signature("whsec_test", BODY, sign_payload("whsec_test", BODY))


@pytest.mark.parametrize(
    ("secret", "body", "header"),
    [
        ("whsec_other", BODY, sign_payload("whsec_test", BODY)),
        ("whsec_test", BODY + b" ", sign_payload("whsec_test", BODY)),
        ("whsec_test", BODY, sign_payload("whsec_test", BODY).removeprefix("sha256=")),
        ("whsec_test", BODY, "sha1=" + hashlib.sha1(BODY).hexdigest()),
        ("whsec_test", BODY, ""),
        ("whsec_test", BODY, None),
    ],
    ids=["wrong-secret", "tampered-body", "no-scheme", "other-scheme", "empty", "missing"],
)
def test_verify_refuses_everything_else(secret: str, body: bytes, header: str | None) -> None:
    assert not verify_signature(secret, body, header)
