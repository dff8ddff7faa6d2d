"""The chat product's test client (tollway's product client with the calls chat tests
repeat), accounts on chat for tests that build their own gateway, and the rows the API
cannot create (inboxes, incoming messages)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from tollway import Gateway
from tollway.testing import KeylessProductClient, ProductClientFactory, Tenant
from tollway.testing import tenant as subscribed_tenant
from tollway_chat.product import PRODUCT, SCOPES
from tollway_chat.service import Chat

CHAT = PRODUCT.prefix


@dataclass(frozen=True)
class ChatClient(KeylessProductClient):
    """A gateway serving chat in-process; accounts ``owner`` (acme) and ``other``
    (globex) on the business plan, with keys holding every chat scope."""

    async def tenant(self, name: str, *, scopes: Iterable[str]) -> Tenant:
        """Another account on chat, its key holding only ``scopes``."""
        return await self.product_client.tenant(name, scopes=scopes)

    async def post(self, path: str, body: dict[str, Any], *, expect: int = 201) -> Any:
        return await self.product_client.call("POST", path, json=body, expect=expect)

    async def get(self, path: str, *, expect: int = 200, **params: Any) -> Any:
        return await self.product_client.call("GET", path, params=params, expect=expect)

    async def patch(self, path: str, body: dict[str, Any], *, expect: int = 200) -> Any:
        return await self.product_client.call("PATCH", path, json=body, expect=expect)

    async def contact(self, name: str = "Ada", **fields: Any) -> dict[str, Any]:
        body = {"name": name, "email": f"{name.lower()}@example.com", **fields}
        created: dict[str, Any] = await self.post("/contacts", body)
        return created

    async def agent(self, name: str = "Grace", **fields: Any) -> dict[str, Any]:
        body = {"name": name, "email": f"{name.lower()}@support.example", **fields}
        created: dict[str, Any] = await self.post("/agents", body)
        return created

    async def conversation(self, inbox_id: int, contact_id: int, **fields: Any) -> dict[str, Any]:
        body = {"inbox_id": inbox_id, "contact_id": contact_id, **fields}
        created: dict[str, Any] = await self.post("/conversations", body)
        return created


@asynccontextmanager
async def open_chat(
    product_client: ProductClientFactory,
    *,
    settings: Mapping[str, Any] | None = None,
    **options: Any,
) -> AsyncIterator[ChatClient]:
    """``product_client("chat", settings=..., **options)`` as a :class:`ChatClient`
    (``products=`` configures chat too, ``extra_plugins=`` adds plugins...)."""
    async with product_client(PRODUCT.name, settings=settings, **options) as opened:
        yield ChatClient(opened)


async def tenant(gateway: Gateway, name: str = "acme") -> Tenant:
    """An account on chat's business plan with a key holding every chat scope, for
    tests that make their own gateway."""
    return await subscribed_tenant(
        gateway, name, plans={PRODUCT.name: "business"}, scopes=tuple(SCOPES)
    )


async def inbox(
    gateway: Gateway, owner: Tenant, name: str = "Website", channel: str = "live_chat"
) -> int:
    async with gateway.database.transaction() as session:
        return await Chat(session, owner.account_id, gateway.webhooks).create_inbox(name, channel)


async def receive(gateway: Gateway, owner: Tenant, conversation_id: int, content: str) -> Any:
    """An incoming message from the conversation's contact, as a channel adds it."""
    async with gateway.database.transaction() as session:
        chat = Chat(session, owner.account_id, gateway.webhooks)
        return await chat.receive_message(conversation_id, content)


def sse_events(body: str) -> list[dict[str, str]]:
    """The fields of each Server-Sent Event in ``body`` (comments left out)."""
    events = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if line and not line.startswith(":") and ":" in line:
                name, _, value = line.partition(":")
                fields[name] = fields.get(name, "") + value.removeprefix(" ")
        if fields:
            events.append(fields)
    return events
