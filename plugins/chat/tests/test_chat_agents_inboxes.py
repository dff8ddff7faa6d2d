"""Agents and inboxes over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from chat_client import CHAT, inbox, open_chat

from tollway.testing import ProductClientFactory


async def test_create_and_list_agents(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        assert await chat.get("/agents") == {"data": [], "total": 0}
        grace = await chat.post("/agents", {"name": " Grace ", "email": "grace@support.example"})
        assert grace == {
            "id": grace["id"],
            "name": "Grace",
            "email": "grace@support.example",
            "role": "agent",
            "availability": "offline",
        }
        alan = await chat.agent("Alan", role="administrator")
        assert alan["role"] == "administrator"
        assert alan["availability"] == "offline"
        assert await chat.get("/agents") == {"data": [grace, alan], "total": 2}
        foreign = await chat.client.get(f"{CHAT}/agents", headers=chat.other.headers)
        assert foreign.json() == {"data": [], "total": 0}


async def test_agent_email_is_unique_per_account(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        await chat.agent("Grace")
        error = await chat.post(
            "/agents", {"name": "G2", "email": "grace@support.example"}, expect=409
        )
        assert error == {"detail": "An agent with email grace@support.example already exists"}
        response = await chat.client.post(
            f"{CHAT}/agents",
            json={"name": "Grace", "email": "grace@support.example"},
            headers=chat.other.headers,
        )
        assert response.status_code == 201
        assert (await chat.get("/agents"))["total"] == 1


@pytest.mark.parametrize(
    "body",
    [
        {"name": "Grace"},
        {"email": "g@x.io"},
        {"name": " ", "email": "g@x.io"},
        {"name": "Grace", "email": "nope"},
        {"name": "Grace", "email": "g@x.io", "role": "owner"},
        {"name": "Grace", "email": "g@x.io", "availability": "online"},
    ],
)
async def test_refuses_invalid_agents(
    product_client: ProductClientFactory, body: dict[str, Any]
) -> None:
    async with open_chat(product_client) as chat:
        assert set(await chat.post("/agents", body, expect=400)) == {"detail"}


async def test_inboxes_of_the_account_only(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        assert await chat.get("/inboxes") == {"data": []}
        web = await inbox(chat.gateway, chat.owner, "Website")
        mail = await inbox(chat.gateway, chat.owner, "Support mail", "email")
        await inbox(chat.gateway, chat.other, "Theirs")
        assert await chat.get("/inboxes") == {
            "data": [
                {"id": web, "name": "Website", "channel_type": "live_chat", "is_enabled": True},
                {"id": mail, "name": "Support mail", "channel_type": "email", "is_enabled": True},
            ]
        }
        response = await chat.client.post(
            f"{CHAT}/inboxes", json={"name": "x"}, headers=chat.owner.headers
        )
        assert response.status_code == 405
