"""Messages over HTTP: sending as an agent, private notes, the default agent, ordering,
pagination, and what messages do to their conversation (unread count, activity)."""

from __future__ import annotations

from typing import Any

import pytest
from chat_client import CHAT, ChatClient, inbox, open_chat, receive

from tollway.testing import ProductClientFactory


async def _conversation(chat: ChatClient) -> dict[str, Any]:
    box = await inbox(chat.gateway, chat.owner)
    contact = await chat.contact("Ada")
    return await chat.conversation(box, contact["id"])


async def test_send_as_default_and_given_agent(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        conversation = await _conversation(chat)
        path = f"/conversations/{conversation['id']}/messages"
        first_agent = await chat.agent("Grace")
        sent = await chat.post(path, {"content": "Hello"})
        assert sent["sender"] == {"type": "agent", "id": first_agent["id"], "name": "Grace"}
        admin = await chat.agent("Alan", role="administrator")
        by_default = await chat.post(path, {"content": "From the admin"})
        assert by_default["sender"]["id"] == admin["id"]
        chosen = await chat.post(path, {"content": "Me", "agent_id": first_agent["id"]})
        assert chosen == {
            "id": chosen["id"],
            "conversation_id": conversation["id"],
            "type": "outgoing",
            "content": "Me",
            "private": False,
            "sender": {"type": "agent", "id": first_agent["id"], "name": "Grace"},
            "created_at": chosen["created_at"],
        }
        note = await chat.post(path, {"content": "Internal", "private": True})
        assert note["private"] is True
        assert note["type"] == "outgoing"
        listed = await chat.get(path)
        assert listed["total"] == 4
        assert listed["data"] == [sent, by_default, chosen, note]


async def test_refusals(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        conversation = await _conversation(chat)
        path = f"/conversations/{conversation['id']}/messages"
        error = await chat.post(path, {"content": "nobody to send it"}, expect=422)
        assert "no agent" in error["detail"]
        await chat.agent()
        foreign = await chat.client.post(
            f"{CHAT}/agents", json={"name": "Mal", "email": "m@x.io"}, headers=chat.other.headers
        )
        error = await chat.post(
            path, {"content": "x", "agent_id": foreign.json()["id"]}, expect=422
        )
        assert error == {"detail": f"Agent {foreign.json()['id']} does not exist"}
        for body in (
            {},
            {"content": ""},
            {"content": "a\x00b"},
            {"content": 5},
            {"content": "x", "private": 1},
            {"content": "x", "type": "incoming"},
        ):
            assert set(await chat.post(path, body, expect=400)) == {"detail"}
        assert (await chat.get(path))["total"] == 0
        await chat.post("/conversations/999/messages", {"content": "x"}, expect=404)


async def test_unread_count_and_activity_follow_messages(
    product_client: ProductClientFactory,
) -> None:
    async with open_chat(product_client) as chat:
        conversation = await _conversation(chat)
        await chat.agent()
        path = f"/conversations/{conversation['id']}"
        incoming = await receive(chat.gateway, chat.owner, conversation["id"], "Help?")
        assert incoming.type == "incoming"
        await receive(chat.gateway, chat.owner, conversation["id"], "Anyone?")
        waiting = await chat.get(path)
        assert waiting["unread_count"] == 2
        assert waiting["last_activity_at"] > conversation["last_activity_at"]
        assert waiting["updated_at"] == waiting["last_activity_at"]
        listed = (await chat.get("/conversations"))["data"][0]
        assert listed["unread_count"] == 2

        reply = await chat.post(f"{path}/messages", {"content": "Here!"})
        answered = await chat.get(path)
        assert answered["unread_count"] == 0
        assert answered["last_activity_at"] == reply["created_at"] == answered["updated_at"]

        await receive(chat.gateway, chat.owner, conversation["id"], "Thanks")
        messages = (await chat.get(f"{path}/messages"))["data"]
        assert [message["type"] for message in messages] == [
            "incoming",
            "incoming",
            "outgoing",
            "incoming",
        ]
        assert messages[0]["sender"] == {
            "type": "contact",
            "id": conversation["contact"]["id"],
            "name": "Ada",
        }
        assert (await chat.get(path))["unread_count"] == 1


async def test_most_recent_activity_lists_first(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        box = await inbox(chat.gateway, chat.owner)
        contact = await chat.contact()
        await chat.agent()
        older = await chat.conversation(box, contact["id"])
        newer = await chat.conversation(box, contact["id"])
        assert [c["id"] for c in (await chat.get("/conversations"))["data"]] == [
            newer["id"],
            older["id"],
        ]
        await chat.post(f"/conversations/{older['id']}/messages", {"content": "bump"})
        assert [c["id"] for c in (await chat.get("/conversations"))["data"]] == [
            older["id"],
            newer["id"],
        ]


async def test_pagination(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        conversation = await _conversation(chat)
        await chat.agent()
        path = f"/conversations/{conversation['id']}/messages"
        for number in range(55):
            await chat.post(path, {"content": f"m{number}"})
        first = await chat.get(path)
        assert first["total"] == 55
        assert [m["content"] for m in first["data"]] == [f"m{n}" for n in range(50)]
        second = await chat.get(path, page=2)
        assert [m["content"] for m in second["data"]] == [f"m{n}" for n in range(50, 55)]
        assert len((await chat.get(path, limit=100))["data"]) == 55
        assert [m["content"] for m in (await chat.get(path, page=3, limit=20))["data"]] == [
            f"m{n}" for n in range(40, 55)
        ]


@pytest.mark.parametrize("params", [{"limit": 101}, {"limit": 0}, {"page": 0}, {"page": "x"}])
async def test_pagination_bounds(
    product_client: ProductClientFactory, params: dict[str, Any]
) -> None:
    async with open_chat(product_client) as chat:
        conversation = await _conversation(chat)
        await chat.get(f"/conversations/{conversation['id']}/messages", expect=400, **params)
