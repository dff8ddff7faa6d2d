"""Calling a gateway in-process: HTTP clients on its app, raw ASGI requests, and
accounts with keys to call it with."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec

from tollway.app import create_app
from tollway.gateway import Gateway

BASE_URL = "http://testserver"


@asynccontextmanager
async def app_transport(
    gateway: Gateway, client_address: str = "127.0.0.1"
) -> AsyncIterator[httpx.ASGITransport]:
    """A transport into the gateway's app with the app's lifespan run around, for as
    many clients as a test wants on one app. Requests come from ``client_address``."""
    app = create_app(gateway)
    async with app.lifespan():
        yield httpx.ASGITransport(app=app, client=(client_address, 50000))  # type: ignore[arg-type]


@asynccontextmanager
async def gateway_client(
    gateway: Gateway, client_address: str = "127.0.0.1"
) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to the gateway's app in-process, on the test's own event
    loop (database connections are bound to it), with the app's lifespan run around.
    Requests come from ``client_address`` as the socket peer."""
    async with (
        app_transport(gateway, client_address) as transport,
        httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client,
    ):
        yield client


@dataclass(frozen=True)
class RawAnswer:
    """What :func:`raw_request` got back."""

    status: int
    body: bytes

    def json(self) -> Any:
        return msgspec.json.decode(self.body)


async def raw_request(
    app: Any,
    method: str,
    path: str,
    *,
    query: bytes = b"",
    headers: Iterable[tuple[bytes, bytes]] = (),
    body: bytes = b"",
) -> RawAnswer:
    """One request straight through ``app``'s ASGI interface, with the query string,
    headers and body as raw bytes: what HTTP clients (httpx included) refuse to send,
    such as raw non-ASCII in a query, which browsers do send. For hostile-input tests.
    Run ``app``'s lifespan around it where its routes need the gateway started."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def collect(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, collect)
    [start] = [message for message in sent if message["type"] == "http.response.start"]
    content = b"".join(message.get("body", b"") for message in sent[1:])
    return RawAnswer(start["status"], content)


@dataclass(frozen=True)
class Tenant:
    """An account and one key of it, calling the gateway in a test."""

    account_id: int
    key_id: int
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


async def tenant(
    gateway: Gateway,
    name: str,
    *,
    plans: Mapping[str, str],
    scopes: Iterable[str],
    admin: bool = False,
) -> Tenant:
    """A new account subscribed to ``plans`` (``{product: plan}``) and one key of it
    (named like the account) with ``scopes``."""
    account = await gateway.accounts.create_account(name, plans)
    created = await gateway.accounts.create_key(account, name=name, scopes=scopes, admin=admin)
    return Tenant(account, created.id, created.key)
