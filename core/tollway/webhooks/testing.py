"""A real HTTPS webhook receiver on loopback whose answers a test scripts, for the
tests of the core and of any plugin that emits events (fixtures in ``tollway.testing``).

It speaks just enough HTTP/1.1 (requests one after another on a kept-alive connection,
as many connections as the sender opens) and checks every delivery with the public
:class:`tollway.webhooks.WebhookReceiver`, the way a customer would.
"""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tollway.webhooks import DuplicateWebhookError, WebhookReceiver, WebhookVerificationError

WebhookGateway = Callable[..., Awaitable[Any]]
"""A fixture building gateways: ``await webhook_gateway(start=True, **settings)``."""


@dataclass(frozen=True)
class Reply:
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    hang: bool = False
    """Read the request, then never answer."""
    drop: bool = False
    """Read the request, then close the connection without answering."""


@dataclass
class Request:
    at: float
    headers: dict[str, str]
    body: bytes
    event_id: str | None
    """The body's id, when the delivery verified."""
    status: int | None


@dataclass
class WebhookTestReceiver:
    __test__ = False

    certificate: Path
    key: Path
    secret: str = ""
    script: list[Reply] = field(default_factory=list)
    """Answers for the next requests, in order; afterwards ``200``."""
    requests: list[Request] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    """Event ids verified and answered 2xx: processed, as a real receiver would."""
    duplicates: int = 0
    rejected: list[str] = field(default_factory=list)
    connections: int = 0
    """Connections accepted so far."""
    port: int = 0

    def __post_init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._verifier: WebhookReceiver | None = None
        self._closing = asyncio.Event()
        self._arrived = asyncio.Condition()

    def url(self, path: str = "/hooks") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def trust(self, secret: str) -> None:
        self.secret = secret
        self._verifier = WebhookReceiver(secret)

    async def start(self) -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.certificate, self.key)
        self._closing = asyncio.Event()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, ssl=context)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Go down: drop open connections and refuse new ones until started again (same
        port)."""
        self._closing.set()
        if self._server is not None:
            self._server.close()
            for writer in list(self._open):
                writer.transport.abort()
            await self._server.wait_closed()
            self._server = None

    async def wait_for(self, count: int, within: float = 10.0) -> None:
        """Until ``count`` deliveries were accepted."""
        async with asyncio.timeout(within), self._arrived:
            await self._arrived.wait_for(lambda: len(self.accepted) >= count)

    async def wait_for_requests(self, count: int, within: float = 10.0) -> None:
        async with asyncio.timeout(within), self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests) >= count)

    @property
    def open_connections(self) -> int:
        return len(self._open)

    async def wait_for_no_connections(self, within: float = 10.0) -> None:
        """Until the sender has closed every connection."""
        async with asyncio.timeout(within), self._arrived:
            await self._arrived.wait_for(lambda: not self._open)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._open.add(writer)
        try:
            while await self._answer(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()
            async with self._arrived:
                self._open.discard(writer)
                self._arrived.notify_all()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """One request and its answer; whether the connection stays open."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as error:
            if error.partial:
                raise
            return False  # the sender closed an idle connection
        lines = head.decode("latin-1").split("\r\n")[1:]
        headers = {
            name.strip(): value.strip()
            for name, _, value in (line.partition(":") for line in lines if line)
        }
        length = int(headers.get("Content-Length", "0"))
        body = await reader.readexactly(length)
        reply = self.script.pop(0) if self.script else Reply()
        event_id = self._check(body, headers, reply)
        async with self._arrived:
            self.requests.append(Request(time.monotonic(), headers, body, event_id, reply.status))
            self._arrived.notify_all()
        if reply.hang:
            await self._closing.wait()
            return False
        if reply.drop:
            return False
        extra = "".join(f"{name}: {value}\r\n" for name, value in reply.headers)
        writer.write(
            f"HTTP/1.1 {reply.status} Scripted\r\nContent-Length: 0\r\n{extra}\r\n".encode()
        )
        await writer.drain()
        return headers.get("Connection", "").lower() != "close"

    def _check(self, body: bytes, headers: dict[str, str], reply: Reply) -> str | None:
        assert self._verifier is not None, "call trust(secret) first"
        try:
            payload = self._verifier.verify(body, headers)
        except DuplicateWebhookError:
            self.duplicates += 1
            return None
        except WebhookVerificationError as error:
            self.rejected.append(str(error))
            return None
        event_id: str = payload["id"]
        if 200 <= reply.status < 300 and not (reply.hang or reply.drop):
            self.accepted.append(event_id)
        else:
            # Not processed: the sender will retry, which must not count as a duplicate.
            self._verifier.forget(event_id)
        return event_id


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key."""
    certificate, key = directory / "receiver.pem", directory / "receiver.key"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec"),
            *("-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"),
            *("-subj", "/CN=tollway test receiver"),
            *("-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
            *("-keyout", str(key), "-out", str(certificate)),
        ],
        check=True,
        capture_output=True,
    )
    return certificate, key
