"""Accounts subscribed to the chat product, with a key each, and the rows the API
cannot create (inboxes, incoming messages), for the tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from tollway import Gateway, testing
from tollway.testing import GatewayFactory, Tenant, gateway_client
from tollway_chat.routes import SCOPES
from tollway_chat.service import Chat

CHAT = "/v1/chat"


async def tenant(
    gateway: Gateway, name: str = "acme", *, scopes: Sequence[str] = tuple(SCOPES)
) -> Tenant:
    return await testing.tenant(gateway, name, plans={"chat": "business"}, scopes=scopes)


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


@dataclass
class Setup:
    gateway: Gateway
    client: httpx.AsyncClient
    owner: Tenant
    other: Tenant

    async def post(self, path: str, body: dict[str, Any], *, expect: int = 201) -> Any:
        response = await self.client.post(CHAT + path, json=body, headers=self.owner.headers)
        assert response.status_code == expect, response.text
        return response.json()

    async def get(self, path: str, *, expect: int = 200, **params: Any) -> Any:
        response = await self.client.get(CHAT + path, params=params, headers=self.owner.headers)
        assert response.status_code == expect, response.text
        return response.json()

    async def patch(self, path: str, body: dict[str, Any], *, expect: int = 200) -> Any:
        response = await self.client.patch(CHAT + path, json=body, headers=self.owner.headers)
        assert response.status_code == expect, response.text
        return response.json()

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
async def chat_setup(factory: GatewayFactory) -> AsyncIterator[Setup]:
    gateway = await factory(plugins=["chat"])
    owner = await tenant(gateway, "acme")
    other = await tenant(gateway, "globex")
    async with gateway_client(gateway) as client:
        yield Setup(gateway, client, owner, other)


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
