"""One HTTP attempt: POST a signed body, with a hard time limit, to checked addresses."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import certifi
import httpcore

from tollway.webhooks.schedule import parse_retry_after
from tollway.webhooks.ssrf import GuardedNetworkBackend

USER_AGENT = "tollway-webhooks/1"
_MAX_ERROR = 300


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


async def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    time_limit: float,
    ca_file: str | None = None,
    allow_private: bool = False,
) -> Attempt:
    """POST ``body`` to ``url``; never raises for network trouble, it returns it.

    ``time_limit`` bounds the whole attempt (DNS, connect, TLS, upload, response
    headers): a receiver that accepts and never answers costs exactly that. The
    response body is not read, nor are redirects followed (3xx is a failure).
    """
    started = time.perf_counter()
    status: int | None = None
    retry_after: float | None = None
    error: str | None = None
    try:
        async with (
            asyncio.timeout(time_limit),
            httpcore.AsyncConnectionPool(
                ssl_context=ssl_context(ca_file),
                network_backend=GuardedNetworkBackend(allow_private=allow_private),
                max_connections=1,
            ) as pool,
            pool.stream(
                "POST",
                url,
                headers=[("User-Agent", USER_AGENT), *headers.items()],
                content=body,
            ) as response,
        ):
            status = response.status
            retry_after = parse_retry_after(_header(response.headers, b"retry-after"))
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


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None
