"""Contact search reads ``q`` as the UTF-8 text the client sent, raw or %-escaped."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
from chat_accounts import CHAT, chat_setup

from tollway.testing import GatewayFactory, Tenant


async def get_raw(
    client: httpx.AsyncClient, path: str, query: bytes, owner: Tenant
) -> tuple[int, Any]:
    """``GET path?query`` with the query as raw bytes, as browsers send non-ASCII
    (HTTP clients, httpx included, refuse to), through the client's ASGI app."""
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {owner.key}".encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await transport.app(scope, receive, send)
    body = b"".join(message.get("body", b"") for message in sent[1:])
    return sent[0]["status"], msgspec.json.decode(body)


async def test_search_finds_non_ascii_names_sent_raw(gateway_factory: GatewayFactory) -> None:
    async with chat_setup(gateway_factory) as chat:
        zoe = await chat.post("/contacts", {"name": "Zoë Martin"})
        await chat.post("/contacts", {"name": "Zoe Plain"})
        status, raw = await get_raw(chat.client, f"{CHAT}/contacts", "q=Zoë".encode(), chat.owner)
        escaped = await chat.get("/contacts", q="Zoë")
        lower = await get_raw(chat.client, f"{CHAT}/contacts", "q=zoë m".encode(), chat.owner)
    assert status == 200
    assert raw == escaped == {"data": [zoe], "total": 1}
    assert lower == (200, raw)


async def test_search_text_that_is_not_utf8_is_refused(gateway_factory: GatewayFactory) -> None:
    expected = {"detail": "Invalid request: the query string is not valid UTF-8"}
    async with chat_setup(gateway_factory) as chat:
        await chat.post("/contacts", {"name": "Zoë Martin"})
        assert await chat.get("/contacts", q="%FF", expect=200) == {"data": [], "total": 0}
        escaped = await chat.client.get(f"{CHAT}/contacts?q=%FF", headers=chat.owner.headers)
        raw = await get_raw(chat.client, f"{CHAT}/contacts", b"q=Zo\xeb", chat.owner)
    assert (escaped.status_code, escaped.json()) == raw == (400, expected)
