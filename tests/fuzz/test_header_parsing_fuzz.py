"""Fuzzing our own header parsing with arbitrary bytes: never an exception other than
the documented 4xx, and only well-formed values come out.

ASGI servers hand header values over as bytes, and HTTP lets clients send any byte but
CR, LF and NUL in them (servers differ on which they pass); the strategies send all.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import pytest
from fuzzing import budget
from hypothesis import example, given
from hypothesis import strategies as st
from litestar import Request

from tollway import UnsupportedMediaType, etag_matches
from tollway.admission.access import bearer_token
from tollway.bodies import MAX_MESSAGE, is_json_media_type, refuse_other_media_types
from tollway.net import ClientAddress, PublicOrigin
from tollway.state import request_id
from tollway_chat.routes import MAX_ROW_ID, _last_event_id

TRUSTED = ["10.0.0.0/8", "fd00::/8"]

values = st.binary(max_size=60)
"""A header value: any bytes."""


def header_values(*alphabet: bytes) -> st.SearchStrategy[bytes]:
    """Any bytes, and values made of the bytes a parser looks for."""
    return values | st.lists(st.sampled_from(alphabet) | values, max_size=8).map(b"".join)


def scope_with(headers: list[tuple[bytes, bytes]], client: str = "203.0.113.9") -> dict[str, Any]:
    return {
        "type": "http",
        "method": "GET",
        "path": "/",
        "query_string": b"",
        "headers": headers,
        "client": (client, 50000),
        "server": ("127.0.0.1", 8000),
        "scheme": "http",
        "state": {},
    }


@budget(300)
@given(value=header_values(b"Bearer ", b"bearer", b" ", b"\t", b"tw_", b"\xff", b"\x00"))
def test_bearer_token(value: bytes) -> None:
    token = bearer_token(scope_with([(b"authorization", value)])["headers"])  # type: ignore[arg-type]
    if value[:7].lower() == b"bearer ":
        assert token == value[7:].decode("latin-1").strip()
    else:
        assert token is None


@budget(300)
@given(value=header_values(b"a", b"0", b"-", b".", b":", b"_", b"\xff", b" "))
@example(value=b"lb-request-0001")
def test_request_id(value: bytes) -> None:
    chosen = request_id(scope_with([(b"x-request-id", value)]))  # type: ignore[arg-type]
    assert re.fullmatch(r"[A-Za-z0-9._:-]{8,128}", chosen)
    inbound = value.decode("latin-1")
    assert (chosen == inbound) == bool(re.fullmatch(r"[A-Za-z0-9._:-]{8,128}", inbound))


addresses = st.ip_addresses().map(str)
hops = header_values(b",", b" ", b"10.0.0.1", b"fd00::1", b"198.51.100.7", b"::ffff:10.0.0.1", b"[")


@budget(300)
@given(
    peer=st.sampled_from(["10.1.2.3", "fd00::5", "203.0.113.9"]) | addresses,
    forwarded=st.lists(hops, max_size=3),
)
def test_client_address(peer: str, forwarded: list[bytes]) -> None:
    scope = scope_with([(b"x-forwarded-for", line) for line in forwarded], client=peer)
    found = ClientAddress(TRUSTED).of(scope)
    assert found == peer or ipaddress.ip_address(found)


@budget(300)
@given(
    peer=st.sampled_from(["10.1.2.3", "203.0.113.9"]),
    protos=st.lists(header_values(b"https", b"HTTP", b",", b" "), max_size=2),
    hosts=st.lists(header_values(b"example.com", b":443", b"[::1]", b",", b"/", b"@"), max_size=2),
)
def test_public_origin(peer: str, protos: list[bytes], hosts: list[bytes]) -> None:
    headers = [(b"x-forwarded-proto", line) for line in protos]
    headers += [(b"x-forwarded-host", line) for line in hosts]
    origin = PublicOrigin(TRUSTED).of(scope_with(headers, client=peer))
    scheme, _, host = origin.partition("://")
    assert scheme in {"http", "https"}
    assert re.fullmatch(r"[a-z0-9.\-]+(:[0-9]{1,5})?|\[[0-9a-f:.]+\](:[0-9]{1,5})?", host)


@budget(300)
@given(value=header_values(b'"abc"', b"W/", b",", b"*", b" ", b"\xff"))
def test_if_none_match(value: bytes) -> None:
    # Litestar reads header values as Latin-1.
    text = value.decode("latin-1")
    assert etag_matches(text, '"abc"') == (
        "*" in [tag.strip() for tag in text.split(",")]
        or '"abc"' in [tag.strip().removeprefix("W/") for tag in text.split(",")]
    )


@budget(300)
@given(value=header_values(b"0", b"7", b"9" * 18, b"-", b"+", b" ", b"\xb2", b"\xb9"))
@example(value=b"\xb2")
def test_last_event_id(value: bytes) -> None:
    request = Request(scope_with([(b"last-event-id", value)]))  # type: ignore[arg-type]
    assert 0 <= _last_event_id(request, None) <= MAX_ROW_ID


@budget(300)
@given(value=header_values(b"application/", b"json", b"+json", b";", b"charset=utf-8", b" "))
@example(value=b"application/json")
@example(value=b"application/merge-patch+json; charset=utf-8")
def test_content_type(value: bytes) -> None:
    json_like = is_json_media_type(value)
    essence = value.split(b";")[0].strip().lower()
    assert json_like == (
        essence == b"application/json"
        or (essence.startswith(b"application/") and essence.endswith(b"+json"))
    )
    scope = scope_with([(b"content-type", value)])
    if json_like:
        refuse_other_media_types(scope)  # type: ignore[arg-type]
        return
    with pytest.raises(UnsupportedMediaType) as refusal:
        refuse_other_media_types(scope)  # type: ignore[arg-type]
    assert len(refusal.value.message) <= MAX_MESSAGE
