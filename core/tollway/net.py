"""Who is the client: the socket peer, or what trusted proxies say it is."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class ClientAddress:
    """Finds a request's client address.

    ``X-Forwarded-For`` is believed only when the socket peer is a trusted proxy; the
    client is then the right-most address in the chain that is not itself a trusted
    proxy (anything left of it could have been written by the client).
    """

    def __init__(self, trusted_proxies: Iterable[str] = ()) -> None:
        self._trusted: tuple[Network, ...] = tuple(
            ipaddress.ip_network(item.strip(), strict=False) for item in trusted_proxies
        )

    def _is_trusted(self, address: str) -> bool:
        if not self._trusted:
            return False
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self._trusted)

    def of(self, scope: Any) -> str:
        """The client address of an ASGI ``scope`` (``"unknown"`` without a peer)."""
        client = scope.get("client")
        peer: str = client[0] if client else "unknown"
        if not self._is_trusted(peer):
            return peer
        forwarded = [
            value.decode("latin-1")
            for name, value in scope.get("headers", ())
            if name == b"x-forwarded-for"
        ]
        hops = [hop.strip() for line in forwarded for hop in line.split(",") if hop.strip()]
        for hop in reversed(hops):
            if not self._is_trusted(hop):
                return _valid_or(hop, peer)
        return _valid_or(hops[0], peer) if hops else peer


def _valid_or(candidate: str, fallback: str) -> str:
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return fallback
