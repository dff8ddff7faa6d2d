"""Fetching a caller's ``image_url`` without letting it reach internal networks.

Only ``http://`` and ``https://``; every connection (redirects included) goes through
the core's :class:`~tollway.GuardedNetworkBackend`, which refuses
loopback, private, link-local and other non-public addresses (unless allowed) and
cloud metadata addresses always, checking the very address it connects to. The body
is read in chunks and abandoned as soon as it passes the size cap; the whole fetch
has one deadline. Whatever stops a fetch is a :class:`FetchError`, a 422 whose
message says why.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

import certifi
import httpcore

from tollway import MAX_URL_LENGTH, GuardedNetworkBackend, UnprocessableEntity

USER_AGENT = "tollway-removebg/1"
MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_NETWORK_ERRORS = (
    httpcore.NetworkError,
    httpcore.TimeoutException,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
)


class FetchError(UnprocessableEntity):
    """The image at ``image_url`` could not be fetched; ``reason`` is safe to show the
    caller (a batch item keeps the message as its ``error``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"image_url is not fetchable: {reason}")


def ascii_url(url: str) -> str:
    """``url`` as sent on the wire: the host IDNA-encoded, the path and query
    percent-encoded where they are not ASCII, the fragment dropped. Raises
    ``ValueError`` for a URL that has no such form."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise ValueError(f"host {parts.hostname!r} is not a valid name") from None
    if ":" in host:
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    try:
        path = quote(parts.path, safe="/%:@!$&'()*+,;=-._~")
        query = quote(parts.query, safe="/?%:@!$&'()*+,;=-._~")
    except UnicodeError:
        raise ValueError("the path or query is not valid text") from None
    return urlunsplit((parts.scheme.lower(), netloc, path, query, ""))


def check_image_url(url: str) -> str | None:
    """Why ``url`` is not an acceptable image URL (``None`` if it is)."""
    if len(url) > MAX_URL_LENGTH:
        return f"longer than {MAX_URL_LENGTH} characters"
    if any(character.isspace() or ord(character) < 32 for character in url):
        return "must not contain spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises for a malformed port)
    except ValueError as error:
        return f"is not a valid URL ({error})"
    if parts.scheme.lower() not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname:
        return "has no host"
    if parts.username is not None or parts.password is not None:
        return "must not contain credentials"
    try:
        ascii_url(url)
    except ValueError as error:
        return f"is not a valid URL ({error})"
    return None


@dataclass(frozen=True, slots=True)
class _Answer:
    content: bytes | None
    location: str | None


class ImageFetcher:
    """One connection pool per gateway for fetching caller images."""

    def __init__(self, *, allow_private: bool, timeout: float, max_bytes: int) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl.create_default_context(cafile=certifi.where()),
            network_backend=GuardedNetworkBackend(allow_private=allow_private),
            max_connections=32,
            keepalive_expiry=5.0,
        )

    async def fetch(self, url: str) -> bytes:
        """The bytes at ``url``, following up to 5 redirects (each target checked
        again); raises :class:`FetchError` saying why not."""
        try:
            async with asyncio.timeout(self.timeout):
                for _ in range(MAX_REDIRECTS + 1):
                    problem = check_image_url(url)
                    if problem is not None:
                        raise FetchError(f"image_url {problem}")
                    answer = await self._get(ascii_url(url))
                    if answer.content is not None:
                        return answer.content
                    url = urljoin(url, answer.location or "")
        except TimeoutError:
            raise FetchError(f"fetching the image took longer than {self.timeout:g} s") from None
        except _NETWORK_ERRORS as error:
            reason = str(error) or type(error).__name__
            raise FetchError(f"the image could not be fetched: {reason}") from None
        raise FetchError(f"the image URL redirected more than {MAX_REDIRECTS} times")

    async def _get(self, url: str) -> _Answer:
        headers = [(b"User-Agent", USER_AGENT.encode()), (b"Accept", b"image/*")]
        async with self._pool.stream("GET", url, headers=headers) as response:
            if response.status in _REDIRECTS:
                location = _header(response.headers, b"location")
                if location is None:
                    raise FetchError(f"the image URL answered HTTP {response.status}")
                return _Answer(None, location)
            if response.status != 200:
                raise FetchError(f"the image URL answered HTTP {response.status}")
            declared = _header(response.headers, b"content-length") or ""
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise FetchError(self._too_large())
            chunks: list[bytes] = []
            received = 0
            async for chunk in response.aiter_stream():
                received += len(chunk)
                if received > self.max_bytes:
                    raise FetchError(self._too_large())
                chunks.append(chunk)
            return _Answer(b"".join(chunks), None)

    def _too_large(self) -> str:
        return f"the image is larger than the limit of {self.max_bytes} bytes"

    async def close(self) -> None:
        await self._pool.aclose()


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1").strip()
    return None
