"""Client addresses: the socket peer, or X-Forwarded-For from trusted proxies only."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# Against the standard library's parsing alone ----------------------------------------

TRUSTED = ["10.0.0.0/8", "127.0.0.1", "192.168.4.0/23", "fd00::/8", "::1"]


def _reference(trusted: list[str], peer: str, hops: list[str]) -> str:
    """The client address as ``ipaddress`` alone finds it (what the C fast path for
    IPv4 must agree with)."""
    networks = [ipaddress.ip_network(item, strict=False) for item in trusted]

    def is_trusted(address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in networks)

    def valid_or(candidate: str) -> str:
        try:
            return str(ipaddress.ip_address(candidate))
        except ValueError:
            return peer

    if not is_trusted(peer):
        return peer
    for hop in reversed(hops):
        if not is_trusted(hop):
            return valid_or(hop)
    return valid_or(hops[0]) if hops else peer


octets = st.integers(0, 255).map(str) | st.sampled_from(["01", "00", "256", "010", " 1", "1 "])
addresses = (
    st.builds(".".join, st.lists(octets, min_size=3, max_size=5))
    | st.ip_addresses().map(str)
    | st.sampled_from(["::ffff:10.1.2.3", "fe80::1%eth0", "10.1.2.3/8", "", "unknown"])
    | st.text(alphabet="0123456789.:abcdef%x ", max_size=20)
)


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(
    peer=st.sampled_from(["10.1.2.3", "127.0.0.1", "192.168.5.255", "::1", "203.0.113.9"])
    | addresses.filter(bool),
    hops=st.lists(addresses, max_size=4),
)
def test_client_address_agrees_with_ipaddress(peer: str, hops: list[str]) -> None:
    line = ", ".join(hops)
    items = [item.strip() for item in line.split(",") if item.strip()]  # as a header is read
    found = ClientAddress(TRUSTED).of(scope(peer, line) if hops else scope(peer))
    assert found == _reference(TRUSTED, peer, items)


def test_a_request_address_is_worked_out_once() -> None:
    """The limiter and the product both ask; the second answer comes from the scope."""
    clients = ClientAddress(["10.0.0.0/8"])
    request_scope = scope("10.1.2.3", "198.51.100.1")
    assert clients.of(request_scope) == "198.51.100.1"
    request_scope["headers"] = []
    assert clients.of(request_scope) == "198.51.100.1"
    assert ClientAddress(["10.0.0.0/8"]).of(request_scope) == "10.1.2.3"
