"""The contact's side of live_chat: resuming a stream with Last-Event-ID, writing in
with the stream token, and the operator's cap on stream lifetime."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from chat_client import CHAT, ChatClient, inbox, open_chat, sse_events

from tollway.testing import ProductClientFactory


@asynccontextmanager
async def _live(
    product_client: ProductClientFactory, **chat: Any
) -> AsyncIterator[tuple[ChatClient, dict[str, Any]]]:
    """A live_chat conversation with Ada, and a stream token of hers."""
    # Failed sends (Ada has no stream open at first) are retried only after the test.
    settings = {"delivery_retry_schedule": [60], **chat}
    async with open_chat(product_client, settings=settings) as setup:
        box = await inbox(setup.gateway, setup.owner, "Website", channel="live_chat")
        await setup.agent("Grace")
        contact = await setup.contact("Ada")
        conversation = await setup.conversation(box, contact["id"])
        token = await setup.post(f"/contacts/{contact['id']}/stream-token", {})
        yield setup, {"conversation": conversation, "contact": contact, "token": token["token"]}


async def test_a_reconnecting_stream_gets_what_it_missed(
    product_client: ProductClientFactory,
) -> None:
    async with _live(product_client) as (chat, live):
        path = f"/conversations/{live['conversation']['id']}/messages"
        first = await chat.post(path, {"content": "first"})
        await chat.post(path, {"content": "a note", "private": True})
        second = await chat.post(path, {"content": "second"})
        third = await chat.post(path, {"content": "third"})
        stream = f"{CHAT}/stream"
        params = {"token": live["token"], "max_seconds": 1}
        resumed = await chat.client.get(
            stream, params=params, headers={"Last-Event-ID": str(first["id"])}
        )
        events = sse_events(resumed.text)
        assert [e.get("event") for e in events] == ["ready", "message", "message"]
        assert [e["id"] for e in events[1:]] == [str(second["id"]), str(third["id"])]
        # ``after`` does the same for clients that cannot set headers; a fresh stream
        # (no id) replays nothing.
        after = await chat.client.get(stream, params={**params, "after": second["id"]})
        assert [e.get("id") for e in sse_events(after.text)[1:]] == [str(third["id"])]
        fresh = await chat.client.get(stream, params=params)
        assert [e.get("event") for e in sse_events(fresh.text)] == ["ready"]
        for garbage in ("not-a-number", "99999999999999", "9" * 40):
            response = await chat.client.get(
                stream, params=params, headers={"Last-Event-ID": garbage}
            )
            assert [e.get("event") for e in sse_events(response.text)] == ["ready"], garbage
        beyond = await chat.client.get(stream, params={**params, "after": 2**31})
        assert beyond.status_code == 400  # past what a message id can be
        # Another contact's messages are never replayed to this one.
        bob = await chat.contact("Bob")
        bob_token = await chat.post(f"/contacts/{bob['id']}/stream-token", {})
        other = await chat.client.get(
            stream, params={"token": bob_token["token"], "max_seconds": 1, "after": 0}
        )
        assert [e.get("event") for e in sse_events(other.text)] == ["ready"]


async def test_the_contact_writes_in_with_the_stream_token(
    product_client: ProductClientFactory,
) -> None:
    async with _live(product_client) as (chat, live):
        conversation = live["conversation"]
        url, token = f"{CHAT}/stream/messages", {"token": live["token"]}
        written = await chat.client.post(url, json={"content": "Where is my order?"}, params=token)
        assert written.status_code == 201, written.text
        message = written.json()
        assert message["type"] == "incoming"
        assert message["conversation_id"] == conversation["id"]
        assert message["sender"] == {
            "type": "contact",
            "id": live["contact"]["id"],
            "name": "Ada",
        }
        assert message["private"] is False
        seen = await chat.get(f"/conversations/{conversation['id']}")
        assert seen["unread_count"] == 1
        listed = await chat.get(f"/conversations/{conversation['id']}/messages")
        assert [m["content"] for m in listed["data"]] == ["Where is my order?"]
        # A resolved conversation opens again when the contact writes.
        await chat.patch(f"/conversations/{conversation['id']}", {"status": "resolved"})
        again = await chat.client.post(
            url, json={"content": "Hello?", "conversation_id": conversation["id"]}, params=token
        )
        assert again.status_code == 201, again.text
        reopened = await chat.get(f"/conversations/{conversation['id']}")
        assert (reopened["status"], reopened["unread_count"]) == ("open", 2)


async def test_contact_writes_are_refused_without_a_valid_token(
    product_client: ProductClientFactory,
) -> None:
    async with _live(product_client) as (chat, live):
        url = f"{CHAT}/stream/messages"
        body = {"content": "hi"}
        missing = await chat.client.post(url, json=body, headers=chat.owner.headers)
        assert missing.status_code == 400, missing.text  # an API key is not a contact's token
        for wrong in ("not-a-token", chat.owner.key):
            response = await chat.client.post(url, json=body, params={"token": wrong})
            assert response.status_code == 401, (wrong, response.text)
            assert response.json()["detail"]
        token = {"token": live["token"]}
        for bad in ({}, {"content": 5}, {"content": "x", "conversation_id": 0}, {"extra": 1}):
            response = await chat.client.post(url, json=bad, params=token)
            assert response.status_code == 400, (bad, response.text)
        # Another contact's conversation, and an email conversation, are not hers.
        bob = await chat.contact("Bob")
        box = await inbox(chat.gateway, chat.owner, "Website 2")
        bobs = await chat.conversation(box, bob["id"])
        mail = await inbox(chat.gateway, chat.owner, "Mail", channel="email")
        email = await chat.conversation(mail, live["contact"]["id"])
        for conversation_id in (bobs["id"], email["id"], 999999):
            response = await chat.client.post(
                url, json={"content": "x", "conversation_id": conversation_id}, params=token
            )
            assert response.status_code == 404, response.text
        # A contact without any live_chat conversation has nowhere to write.
        carol = await chat.contact("Carol")
        carols = await chat.post(f"/contacts/{carol['id']}/stream-token", {})
        response = await chat.client.post(url, json=body, params={"token": carols["token"]})
        assert response.status_code == 422, response.text
        assert (await chat.get(f"/conversations/{bobs['id']}"))["unread_count"] == 0


async def test_the_operator_caps_stream_lifetime(product_client: ProductClientFactory) -> None:
    async with _live(product_client, stream_max_seconds=1) as (chat, live):
        started = asyncio.get_running_loop().time()
        response = await chat.client.get(
            f"{CHAT}/stream", params={"token": live["token"], "max_seconds": 3600}
        )
        assert response.status_code == 200
        assert asyncio.get_running_loop().time() - started < 5
        assert [e.get("event") for e in sse_events(response.text)] == ["ready"]
