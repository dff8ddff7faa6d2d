"""Keeping webhook deliveries away from internal networks (server-side request forgery).

A customer chooses the URL the gateway POSTs to, so without a guard they could make it
call the cloud metadata service or an internal admin port. URLs must be HTTPS and every
address their host resolves to must be globally routable. The check runs when an
endpoint is registered and again on every connection: :class:`GuardedNetworkBackend`
resolves, checks and then connects to the very address it checked, so a DNS answer
that changes between check and connect (DNS rebinding) cannot slip through.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpcore

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2048

CLOUD_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(address)
    for address in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean ...
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure wire server (a public address)
    )
)
"""Refused even when private addresses are allowed: never a legitimate receiver."""

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class UnsafeURLError(ValueError):
    """A webhook URL the gateway refuses to call; the message says why."""


@dataclass(frozen=True, slots=True)
class Target:
    host: str
    port: int


def check_url(url: str) -> Target:
    """The host and port of an acceptable webhook URL, before any DNS lookup."""
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeURLError(f"URL is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url.strip())
        port = parts.port or 443
    except ValueError as error:
        raise UnsafeURLError(f"invalid URL: {error}") from None
    if parts.scheme.lower() != "https":
        raise UnsafeURLError("URL must use https://")
    if not parts.hostname:
        raise UnsafeURLError("URL has no host")
    if parts.username is not None or parts.password is not None:
        raise UnsafeURLError("URL must not contain credentials")
    return Target(parts.hostname, port)


def _embedded_ipv4(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address stands for (mapped, 6to4, NAT64), else ``ip``."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def address_problem(ip: IPAddress, *, allow_private: bool = False) -> str | None:
    """Why the gateway must not connect to ``ip`` (``None`` if it may)."""
    ip = _embedded_ipv4(ip)
    if ip in CLOUD_METADATA_ADDRESSES:
        return "a cloud metadata address"
    if allow_private:
        return None
    for kind, flag in (
        ("an unspecified", ip.is_unspecified),
        ("a loopback", ip.is_loopback),
        ("a link-local", ip.is_link_local),
        ("a multicast", ip.is_multicast),
        ("a private", ip.is_private),
        ("a reserved", ip.is_reserved),
    ):
        if flag:
            return f"{kind} address"
    # Shared (carrier-grade NAT), documentation and benchmarking ranges are neither
    # private nor public; only globally routable addresses are acceptable receivers.
    return None if ip.is_global else "not a globally routable address"


def never_resolves(host: str) -> bool:
    """Whether ``host`` is under ``.invalid``, which RFC 6761 reserves for names that
    must never resolve: resolvers "SHOULD always return immediate negative responses",
    so the gateway answers itself rather than waiting on a DNS server to say no."""
    name = host.rstrip(".").lower()
    return name == "invalid" or name.endswith(".invalid")


async def resolve(host: str, port: int, *, allow_private: bool = False) -> list[str]:
    """The addresses ``host`` resolves to, all of them checked; raises
    :class:`UnsafeURLError` if any is refused or the name does not resolve.

    Refusing the whole name when one address is bad stops a name that resolves to
    one public and one internal address from reaching the internal one.
    """
    try:
        literal: IPAddress | None = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        literal = None
    if literal is not None:
        addresses: Iterable[str] = [str(literal)]
    elif never_resolves(host):
        raise UnsafeURLError(f"host {host!r} does not resolve: .invalid names never do")
    else:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as error:
            raise UnsafeURLError(f"host {host!r} does not resolve: {error}") from None
        addresses = dict.fromkeys(str(info[4][0]) for info in infos)
    checked = []
    for address in addresses:
        problem = address_problem(ipaddress.ip_address(address), allow_private=allow_private)
        if problem is not None:
            raise UnsafeURLError(f"host {host!r} resolves to {address}, {problem}")
        checked.append(address)
    if not checked:
        raise UnsafeURLError(f"host {host!r} does not resolve")
    return checked


class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that only connects to checked addresses.

    TLS still verifies the certificate against the URL's host name: httpcore passes
    the origin host, not the address, as the TLS server name.
    """

    def __init__(self, *, allow_private: bool = False) -> None:
        self._allow_private = allow_private
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            addresses = await resolve(host, port, allow_private=self._allow_private)
        except UnsafeURLError as error:
            raise httpcore.ConnectError(str(error)) from None
        last_error: Exception | None = None
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                last_error = error
        assert last_error is not None
        raise last_error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("webhooks are never delivered over Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)
