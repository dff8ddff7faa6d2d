"""Who is the client, and by what origin it reached us: the socket's own view, or what
trusted proxies say, never what any client may write."""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from typing import Any

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_HOST = re.compile(r"(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class _TrustedProxies:
    """The ``trusted_proxies`` setting: peers whose ``X-Forwarded-*`` headers are believed."""

    def __init__(self, trusted_proxies: Iterable[str] = ()) -> None:
        self._trusted: tuple[Network, ...] = tuple(
            ipaddress.ip_network(item.strip(), strict=False) for item in trusted_proxies
        )
        self._trusted_v4 = tuple(
            (int(network.network_address), int(network.netmask))
            for network in self._trusted
            if network.version == 4
        )
        """The IPv4 networks as (address, mask) integers, for :func:`_ipv4`'s."""

    def _is_trusted(self, address: str) -> bool:
        if not self._trusted:
            return False
        if (value := _ipv4(address)) is not None:
            return any(value & mask == network for network, mask in self._trusted_v4)
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self._trusted)

    def _peer(self, scope: Any) -> str:
        client = scope.get("client")
        peer: str = client[0] if client else "unknown"
        return peer


class ClientAddress(_TrustedProxies):
    """Finds a request's client address.

    ``X-Forwarded-For`` is believed only when the socket peer is a trusted proxy; the
    client is then the right-most address in the chain that is not itself a trusted
    proxy (anything left of it could have been written by the client).
    """

    def __init__(self, trusted_proxies: Iterable[str] = ()) -> None:
        super().__init__(trusted_proxies)
        self._found = f"tollway.client_address.{id(self)}"
        """The scope key this instance keeps a request's address under: the limiter
        and the product may both ask for it."""

    def of(self, scope: Any) -> str:
        """The client address of an ASGI ``scope`` (``"unknown"`` without a peer),
        worked out once per request."""
        found: str | None = scope.get(self._found)
        if found is None:
            found = scope[self._found] = self._address(scope)
        return found

    def _address(self, scope: Any) -> str:
        peer = self._peer(scope)
        if not self._is_trusted(peer):
            return peer
        hops = _items(scope, b"x-forwarded-for")
        for hop in reversed(hops):
            if not self._is_trusted(hop):
                return _valid_or(hop, peer)
        return _valid_or(hops[0], peer) if hops else peer


class PublicOrigin(_TrustedProxies):
    """The origin (``scheme://host[:port]``) clients reach this server by, for the
    absolute URLs it hands out.

    From a trusted proxy, the right-most ``X-Forwarded-Proto`` and ``X-Forwarded-Host``
    (those the nearest proxy, ours, wrote); otherwise the server's own: the scheme of
    the connection and the address the server reports (``localhost`` when it reports
    none). Never the ``Host`` header, which any client writes as it pleases. A server
    listening on all addresses reports ``0.0.0.0``: such deployments configure their
    public URL instead.
    """

    def of(self, scope: Any) -> str:
        scheme: str = scope.get("scheme") or "http"
        server = scope.get("server")
        host = _authority(server, scheme) if server else "localhost"
        if self._is_trusted(self._peer(scope)):
            protos = _items(scope, b"x-forwarded-proto")
            if protos and protos[-1].lower() in _DEFAULT_PORTS:
                scheme = protos[-1].lower()
            hosts = _items(scope, b"x-forwarded-host")
            if hosts and _HOST.fullmatch(hosts[-1]):
                host = hosts[-1].lower()
        return f"{scheme}://{host}"


def _items(scope: Any, header: bytes) -> list[str]:
    """The comma-separated items of every ``header`` line, in order, blanks left out."""
    lines = [value.decode("latin-1") for name, value in scope.get("headers", ()) if name == header]
    return [item.strip() for line in lines for item in line.split(",") if item.strip()]


def _authority(server: tuple[str, int | str | None], scheme: str) -> str:
    # uvicorn gives the connection's local address, granian its listening address
    # (0.0.0.0 when bound to all) with the port as a string.
    host, port = server
    if ":" in host:
        host = f"[{host}]"
    if port is None or int(port) == _DEFAULT_PORTS.get(scheme):
        return host
    return f"{host}:{port}"


def _ipv4(text: str) -> int | None:
    """The IPv4 address ``text`` as an integer, or ``None`` when it is not one written
    as ``ipaddress`` takes it (four decimal numbers to 255, no leading zeros), which is
    also its one written form. In C: the ``ipaddress`` module parses in Python, some
    microseconds per address, and behind a proxy every request has two or three."""
    try:
        return int.from_bytes(socket.inet_pton(socket.AF_INET, text))
    except (OSError, ValueError):
        return None


def _valid_or(candidate: str, fallback: str) -> str:
    if _ipv4(candidate) is not None:
        return candidate
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return fallback
