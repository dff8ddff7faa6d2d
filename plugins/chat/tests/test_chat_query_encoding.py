"""Contact search reads ``q`` as the UTF-8 text the client sent, raw or %-escaped."""

from __future__ import annotations

from typing import Any

import httpx
from chat_client import CHAT, open_chat

from tollway.testing import ProductClientFactory, Tenant, raw_request


async def get_raw(
    client: httpx.AsyncClient, path: str, query: bytes, owner: Tenant
) -> tuple[int, Any]:
    """``GET path?query`` with the query as raw bytes, through the client's ASGI app."""
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    authorization = (b"authorization", f"Bearer {owner.key}".encode())
    answer = await raw_request(transport.app, "GET", path, query=query, headers=[authorization])
    return answer.status, answer.json()


async def test_search_finds_non_ascii_names_sent_raw(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        zoe = await chat.post("/contacts", {"name": "Zoë Martin"})
        await chat.post("/contacts", {"name": "Zoe Plain"})
        status, raw = await get_raw(chat.client, f"{CHAT}/contacts", "q=Zoë".encode(), chat.owner)
        escaped = await chat.get("/contacts", q="Zoë")
        lower = await get_raw(chat.client, f"{CHAT}/contacts", "q=zoë m".encode(), chat.owner)
    assert status == 200
    assert raw == escaped == {"data": [zoe], "total": 1}
    assert lower == (200, raw)


async def test_search_text_that_is_not_utf8_is_refused(
    product_client: ProductClientFactory,
) -> None:
    expected = {"detail": "Invalid request: the query string is not valid UTF-8"}
    async with open_chat(product_client) as chat:
        await chat.post("/contacts", {"name": "Zoë Martin"})
        assert await chat.get("/contacts", q="%FF", expect=200) == {"data": [], "total": 0}
        escaped = await chat.client.get(f"{CHAT}/contacts?q=%FF", headers=chat.owner.headers)
        raw = await get_raw(chat.client, f"{CHAT}/contacts", b"q=Zo\xeb", chat.owner)
    assert (escaped.status_code, escaped.json()) == raw == (400, expected)
