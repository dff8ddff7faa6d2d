"""Conversations over HTTP: creation, reading, filters, pagination, PATCH semantics,
scopes and tenant isolation."""

from __future__ import annotations

from typing import Any

import pytest
from chat_client import CHAT, inbox, open_chat

from tollway.testing import ProductClientFactory


async def test_create_defaults_and_get(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        box = await inbox(chat.gateway, chat.owner)
        contact = await chat.contact("Ada")
        created = await chat.conversation(box, contact["id"])
        assert created["status"] == "open"
        assert created["inbox_id"] == box
        assert created["contact"] == {
            "id": contact["id"],
            "name": "Ada",
            "email": "ada@example.com",
        }
        assert created["assigned_agent"] is None
        assert created["unread_count"] == 0
        assert created["created_at"] == created["updated_at"] == created["last_activity_at"]
        assert created["created_at"].endswith("Z")
        fetched = await chat.get(f"/conversations/{created['id']}")
        assert fetched == created
        messages = await chat.get(f"/conversations/{created['id']}/messages")
        assert messages == {"data": [], "total": 0}


async def test_create_pending_with_agent_and_opening_message(
    product_client: ProductClientFactory,
) -> None:
    async with open_chat(product_client) as chat:
        box = await inbox(chat.gateway, chat.owner)
        contact = await chat.contact()
        agent = await chat.agent("Grace")
        created = await chat.conversation(
            box, contact["id"], agent_id=agent["id"], status="pending", message={"content": "Hi!"}
        )
        assert created["status"] == "pending"
        assert created["assigned_agent"] == {"id": agent["id"], "name": "Grace"}
        assert created["unread_count"] == 0
        messages = await chat.get(f"/conversations/{created['id']}/messages")
        assert messages["total"] == 1
        (message,) = messages["data"]
        assert message["type"] == "outgoing"
        assert message["content"] == "Hi!"
        assert message["private"] is False
        assert message["sender"] == {"type": "agent", "id": agent["id"], "name": "Grace"}
        assert (await chat.get(f"/contacts/{contact['id']}"))["conversation_count"] == 1


@pytest.mark.parametrize(
    "body",
    [
        {"status": "resolved"},
        {"status": "snoozed"},
        {"inbox_id": "1"},
        {"inbox_id": 0},
        {"inbox_id": 2**31},
        {"contact_id": None},
        {"message": {"content": ""}},
        {"message": {"content": "a\x00b"}},
        {"message": {}},
        {"unknown": 1},
    ],
)
async def test_create_refuses_invalid_bodies(
    product_client: ProductClientFactory, body: dict[str, Any]
) -> None:
    async with open_chat(product_client) as chat:
        box = await inbox(chat.gateway, chat.owner)
        contact = await chat.contact()
        error = await chat.post(
            "/conversations", {"inbox_id": box, "contact_id": contact["id"], **body}, expect=400
        )
        assert set(error) == {"detail"}


async def test_create_refuses_unknown_and_foreign_references(
    product_client: ProductClientFactory,
) -> None:
    async with open_chat(product_client) as chat:
        box = await inbox(chat.gateway, chat.owner)
        contact = await chat.contact()
        foreign_box = await inbox(chat.gateway, chat.other)
        other_contact = await chat.client.post(
            f"{CHAT}/contacts", json={"name": "Eve"}, headers=chat.other.headers
        )
        other_agent = await chat.client.post(
            f"{CHAT}/agents", json={"name": "Mal", "email": "m@x.io"}, headers=chat.other.headers
        )
        cases = [
            ({"inbox_id": 999}, "Inbox 999 does not exist"),
            ({"inbox_id": foreign_box}, f"Inbox {foreign_box} does not exist"),
            ({"contact_id": 999}, "Contact 999 does not exist"),
            ({"contact_id": other_contact.json()["id"]}, "does not exist"),
            ({"agent_id": other_agent.json()["id"]}, "does not exist"),
            ({"message": {"content": "hello"}}, "no agent"),
        ]
        for fields, detail in cases:
            body = {"inbox_id": box, "contact_id": contact["id"], **fields}
            error = await chat.post("/conversations", body, expect=422)
            assert detail in error["detail"]
        assert (await chat.get("/conversations"))["total"] == 0


async def test_list_filters_order_and_pagination(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        web = await inbox(chat.gateway, chat.owner, "Web")
        mail = await inbox(chat.gateway, chat.owner, "Mail", "email")
        contact = await chat.contact()
        agent = await chat.agent()
        ids = []
        for number in range(30):
            created = await chat.conversation(
                web if number % 2 else mail,
                contact["id"],
                status="pending" if number % 3 == 0 else "open",
                agent_id=agent["id"] if number < 5 else None,
            )
            ids.append(created["id"])
        first = await chat.get("/conversations")
        assert (first["total"], first["page"], first["limit"]) == (30, 1, 25)
        assert [item["id"] for item in first["data"]] == ids[::-1][:25]
        second = await chat.get("/conversations", page=2)
        assert [item["id"] for item in second["data"]] == ids[::-1][25:]
        assert (await chat.get("/conversations", page=4, limit=10))["data"] == []
        assert len((await chat.get("/conversations", limit=50))["data"]) == 30
        pending = await chat.get("/conversations", status="pending")
        assert pending["total"] == 10
        assert {item["status"] for item in pending["data"]} == {"pending"}
        by_inbox = await chat.get("/conversations", inbox_id=web)
        assert by_inbox["total"] == 15
        assert {item["inbox_id"] for item in by_inbox["data"]} == {web}
        by_agent = await chat.get("/conversations", agent_id=agent["id"])
        assert sorted(item["id"] for item in by_agent["data"]) == ids[:5]
        combined = await chat.get(
            "/conversations", status="pending", inbox_id=mail, agent_id=agent["id"]
        )
        assert [item["id"] for item in combined["data"]] == [ids[0]]
        assert (await chat.get("/conversations", status="resolved"))["total"] == 0


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 51},
        {"limit": 0},
        {"page": 0},
        {"page": "two"},
        {"limit": "1.5"},
        {"status": "closed"},
        {"status": "null"},
        {"inbox_id": "null"},
        {"agent_id": 0},
    ],
)
async def test_list_refuses_bad_parameters(
    product_client: ProductClientFactory, params: dict[str, Any]
) -> None:
    async with open_chat(product_client) as chat:
        error = await chat.get("/conversations", expect=400, **params)
        assert set(error) == {"detail"}


async def test_patch_changes_only_given_fields(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        box = await inbox(chat.gateway, chat.owner)
        contact = await chat.contact()
        grace = await chat.agent("Grace")
        alan = await chat.agent("Alan")
        created = await chat.conversation(box, contact["id"], agent_id=grace["id"])
        path = f"/conversations/{created['id']}"

        resolved = await chat.patch(path, {"status": "resolved"})
        assert resolved["status"] == "resolved"
        assert resolved["assigned_agent"] == {"id": grace["id"], "name": "Grace"}
        assert resolved["inbox_id"] == box
        assert resolved["updated_at"] > created["updated_at"]
        assert resolved["last_activity_at"] == created["last_activity_at"]

        reassigned = await chat.patch(path, {"agent_id": alan["id"]})
        assert reassigned["status"] == "resolved"
        assert reassigned["assigned_agent"] == {"id": alan["id"], "name": "Alan"}

        unassigned = await chat.patch(path, {"agent_id": None, "status": "snoozed"})
        assert unassigned["assigned_agent"] is None
        assert unassigned["status"] == "snoozed"

        unchanged = await chat.patch(path, {})
        assert unchanged == unassigned
        assert await chat.get(path) == unassigned

        error = await chat.patch(path, {"agent_id": 999}, expect=422)
        assert error == {"detail": "Agent 999 does not exist"}
        await chat.patch(path, {"status": "closed"}, expect=400)
        await chat.patch(path, {"status": None}, expect=400)
        await chat.patch(path, {"inbox_id": box}, expect=400)
        assert await chat.get(path) == unassigned


async def test_other_accounts_conversations_are_not_found(
    product_client: ProductClientFactory,
) -> None:
    async with open_chat(product_client) as chat:
        box = await inbox(chat.gateway, chat.owner)
        contact = await chat.contact()
        await chat.agent()
        created = await chat.conversation(box, contact["id"])
        path = f"{CHAT}/conversations/{created['id']}"
        foreign = chat.other.headers
        assert (await chat.client.get(path, headers=foreign)).status_code == 404
        response = await chat.client.patch(path, json={"status": "resolved"}, headers=foreign)
        assert response.status_code == 404
        assert response.json() == {"detail": f"Conversation {created['id']} not found"}
        assert (await chat.client.get(f"{path}/messages", headers=foreign)).status_code == 404
        response = await chat.client.post(
            f"{path}/messages", json={"content": "hi"}, headers=foreign
        )
        assert response.status_code == 404
        listing = await chat.client.get(f"{CHAT}/conversations", headers=foreign)
        assert listing.json()["total"] == 0
        assert (await chat.get(f"/conversations/{created['id']}"))["status"] == "open"
        await chat.get("/conversations/999", expect=404)
        await chat.get(f"/conversations/{2**31}", expect=400)


ENDPOINTS = [
    ("GET", "/conversations"),
    ("POST", "/conversations"),
    ("GET", "/conversations/1"),
    ("PATCH", "/conversations/1"),
    ("GET", "/conversations/1/messages"),
    ("POST", "/conversations/1/messages"),
    ("GET", "/contacts"),
    ("POST", "/contacts"),
    ("GET", "/contacts/1"),
    ("GET", "/agents"),
    ("POST", "/agents"),
]


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
async def test_every_endpoint_needs_its_scope(
    product_client: ProductClientFactory, method: str, path: str
) -> None:
    async with open_chat(product_client) as chat:
        reader = await chat.tenant("reader", scopes=["chat:inboxes:read"])
        response = await chat.client.request(
            method, CHAT + path, json={} if method != "GET" else None, headers=reader.headers
        )
        assert response.status_code == 403, response.text
        assert (await chat.client.get(f"{CHAT}/inboxes", headers=reader.headers)).is_success
