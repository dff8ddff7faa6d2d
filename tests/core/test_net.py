"""Client addresses: the socket peer, or X-Forwarded-For from trusted proxies only."""

from __future__ import annotations

from typing import Any

import pytest

from tollway.net import ClientAddress


def scope(peer: str | None, *forwarded: str) -> dict[str, Any]:
    return {
        "client": (peer, 5000) if peer else None,
        "headers": [(b"x-forwarded-for", value.encode()) for value in forwarded],
    }


@pytest.mark.parametrize(
    ("trusted", "request_scope", "expected"),
    [
        ([], scope("203.0.113.9", "198.51.100.1"), "203.0.113.9"),
        (["10.0.0.0/8"], scope("203.0.113.9", "198.51.100.1"), "203.0.113.9"),
        (["10.0.0.0/8"], scope("10.1.2.3", "198.51.100.1"), "198.51.100.1"),
        (["10.0.0.0/8"], scope("10.1.2.3", "6.6.6.6, 198.51.100.1, 10.9.9.9"), "198.51.100.1"),
        (["10.0.0.0/8"], scope("10.1.2.3", "6.6.6.6", "198.51.100.1"), "198.51.100.1"),
        (["10.0.0.0/8"], scope("10.1.2.3", "not-an-ip"), "10.1.2.3"),
        (["10.0.0.0/8"], scope("10.1.2.3"), "10.1.2.3"),
        (["127.0.0.1", "::1"], scope("::1", "2001:db8::7"), "2001:db8::7"),
        ([], scope(None), "unknown"),
    ],
    ids=[
        "no-trust",
        "untrusted-peer",
        "trusted-peer",
        "rightmost-untrusted-hop",
        "several-headers",
        "garbage",
        "no-header",
        "ipv6",
        "no-peer",
    ],
)
def test_client_address(trusted: list[str], request_scope: dict[str, Any], expected: str) -> None:
    assert ClientAddress(trusted).of(request_scope) == expected
