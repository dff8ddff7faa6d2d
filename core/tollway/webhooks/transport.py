"""HTTP attempts: POST a signed body, with a hard time limit, to checked addresses,
over kept-alive connections.

:class:`Connections` keeps one httpcore pool per origin (scheme, host, port), so many
deliveries to one receiver share a few TLS connections instead of a handshake each.
Every connection is still opened through :class:`GuardedNetworkBackend`: the address
is checked when the connection is made, and a pooled connection is one that passed.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

import certifi
import httpcore

from tollway.webhooks.schedule import parse_retry_after
from tollway.webhooks.ssrf import GuardedNetworkBackend

USER_AGENT = "tollway-webhooks/1"
MAX_CONNECTIONS_PER_ORIGIN = 10
"""Open connections to one receiver at most; more concurrent attempts wait for one
(the wait counts against their time limit)."""
IDLE_EXPIRY = 30.0
"""Seconds an unused connection stays open; an origin unused that long loses its pool."""
MAX_RESPONSE_BODY = 64 * 1024
"""Bytes of a response body read (and dropped) so its connection can be reused; a
longer body closes the connection instead."""
_MAX_ERROR = 300

_STALE_CONNECTION = (httpcore.RemoteProtocolError, httpcore.ReadError, httpcore.WriteError)
"""How a request fails on a kept-alive connection the receiver has just closed."""

_opened_connection: ContextVar[bool] = ContextVar("tollway_webhooks_opened", default=False)
"""Set when the current attempt opened a connection rather than reusing one."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one POST came to: a status code, or an error when there was no answer."""

    status_code: int | None
    error: str | None
    latency_ms: int
    retry_after: float | None = None

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@lru_cache(maxsize=4)
def ssl_context(ca_file: str | None) -> ssl.SSLContext:
    """Public CAs plus ``ca_file``; verification is never turned off."""
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


class _MarkingBackend(GuardedNetworkBackend):
    """The guarded backend, noting in the attempt's context that it connected."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        _opened_connection.set(True)
        return await super().connect_tcp(host, port, timeout, local_address, socket_options)


@dataclass(frozen=True, slots=True)
class _Request:
    url: str
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class _OriginPool:
    pool: httpcore.AsyncConnectionPool
    last_used: float
    in_flight: int = 0


class Connections:
    """Long-lived connection pools, one per origin, bounded and expiring when idle.

    Owned by the dispatcher and closed when it stops; an attempt made after that uses
    a connection of its own, closed with the attempt.
    """

    def __init__(self, *, ca_file: str | None = None, allow_private: bool = False) -> None:
        self._ca_file = ca_file
        self._backend = _MarkingBackend(allow_private=allow_private)
        self._pools: dict[tuple[bytes, bytes, int], _OriginPool] = {}
        self._closed = False
        self._next_sweep = 0.0

    @property
    def closed(self) -> bool:
        return self._closed

    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, time_limit: float
    ) -> Attempt:
        """POST ``body`` to ``url``; never raises for network trouble, it returns it.

        ``time_limit`` bounds the whole attempt (waiting for a free connection, DNS,
        connect, TLS, upload, response headers, up to ``MAX_RESPONSE_BODY`` of the
        body): a receiver that accepts and never answers costs exactly that. Redirects
        are not followed (3xx is a failure). A reused connection that turns out to
        have been closed by the receiver is replaced by a new one, once, so keeping
        connections alive fails no attempt that a new connection would not.
        """
        started = time.perf_counter()
        status: int | None = None
        retry_after: float | None = None
        error: str | None = None
        request = _Request(url, [("User-Agent", USER_AGENT), *headers.items()], body)
        try:
            async with asyncio.timeout(time_limit):
                status, retry_after = await self._send(request)
        except (TimeoutError, httpcore.TimeoutException):
            error = f"timed out after {time_limit:g} s"
        except (
            httpcore.NetworkError,
            httpcore.ProtocolError,
            httpcore.UnsupportedProtocol,
            ssl.SSLError,
            OSError,
        ) as problem:
            error = (str(problem) or type(problem).__name__)[:_MAX_ERROR]
        latency_ms = round((time.perf_counter() - started) * 1000)
        return Attempt(status, error, latency_ms, retry_after)

    async def _send(self, request: _Request) -> tuple[int, float | None]:
        try:
            return await self._send_once(request)
        except _STALE_CONNECTION:
            if _opened_connection.get():
                raise
            # The receiver closed the kept-alive connection as we reused it; a new
            # connection gets the answer a new connection would have got.
            return await self._send_once(request)

    async def _send_once(self, request: _Request) -> tuple[int, float | None]:
        _opened_connection.set(False)
        if self._closed:
            async with self._new_pool(1) as pool:
                return await _exchange(pool, request)
        await self.close_idle()
        target = httpcore.URL(request.url)
        origin = (target.scheme, target.host, target.port or 443)
        entry = self._pools.get(origin)
        if entry is None:
            pool = self._new_pool(MAX_CONNECTIONS_PER_ORIGIN)
            entry = self._pools[origin] = _OriginPool(pool, time.monotonic())
        entry.in_flight += 1
        try:
            return await _exchange(entry.pool, request)
        finally:
            entry.in_flight -= 1
            entry.last_used = time.monotonic()
            if self._closed and entry.in_flight == 0:
                await entry.pool.aclose()

    def _new_pool(self, max_connections: int) -> httpcore.AsyncConnectionPool:
        return httpcore.AsyncConnectionPool(
            ssl_context=ssl_context(self._ca_file),
            network_backend=self._backend,
            max_connections=max_connections,
            keepalive_expiry=IDLE_EXPIRY,
        )

    async def close_idle(self) -> None:
        """Close the pools of origins unused for ``IDLE_EXPIRY`` seconds (looked for at
        most once per ``IDLE_EXPIRY``, so it is cheap to call often)."""
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + IDLE_EXPIRY
        idle = [
            origin
            for origin, entry in self._pools.items()
            if entry.in_flight == 0 and now - entry.last_used > IDLE_EXPIRY
        ]
        # Out of the map before the first await, so no attempt takes one meanwhile.
        for entry in [self._pools.pop(origin) for origin in idle]:
            await entry.pool.aclose()

    async def close(self) -> None:
        """Close every connection; those in use close when their attempt ends."""
        self._closed = True
        pools, self._pools = self._pools, {}
        for entry in pools.values():
            if entry.in_flight == 0:
                await entry.pool.aclose()


async def _exchange(
    pool: httpcore.AsyncConnectionPool, request: _Request
) -> tuple[int, float | None]:
    """The response's status and ``Retry-After``, its body read up to the cap."""
    async with pool.stream(
        "POST", request.url, headers=request.headers, content=request.body
    ) as response:
        retry_after = parse_retry_after(_header(response.headers, b"retry-after"))
        read = 0
        async for chunk in response.aiter_stream():
            read += len(chunk)
            if read > MAX_RESPONSE_BODY:
                break
        return response.status, retry_after


async def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    time_limit: float,
    ca_file: str | None = None,
    allow_private: bool = False,
) -> Attempt:
    """One POST on a new connection, closed after it (see :meth:`Connections.post`)."""
    connections = Connections(ca_file=ca_file, allow_private=allow_private)
    try:
        return await connections.post(url, body, headers, time_limit=time_limit)
    finally:
        await connections.close()


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None
