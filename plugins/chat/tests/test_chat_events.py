"""Chat events reach the webhook outbox in the transaction of the change that caused
them: for subscribed endpoints of the account only, and never for a refused request."""

from __future__ import annotations

import json
from typing import Any

from chat_client import ChatClient, inbox, open_chat
from sqlalchemy import JSON, Boolean, column, insert, select, table

from tollway import UTCDateTime, utcnow
from tollway.testing import ProductClientFactory, Tenant
from tollway_chat.product import EVENTS

# The core's webhook tables (its models are not public): an endpoint subscribed the way
# the developer API stores one, and the outbox the events are recorded in.
ENDPOINTS = table(
    "webhook_endpoints",
    column("account_id"),
    column("url"),
    column("events", JSON),
    column("description"),
    column("secret"),
    column("is_active", Boolean),
    column("created_at", UTCDateTime),
)
OUTBOX = table(
    "webhook_events",
    column("account_id"),
    column("event"),
    column("body"),
    column("created_at", UTCDateTime),
)


async def _subscribe(chat: ChatClient, owner: Tenant, events: list[str]) -> None:
    async with chat.gateway.database.transaction() as session:
        await session.execute(
            insert(ENDPOINTS).values(
                account_id=owner.account_id,
                url="https://hooks.example.invalid/chat",
                events=events,
                description="",
                secret="s" * 64,
                is_active=True,
                created_at=utcnow(),
            )
        )


async def _outbox(chat: ChatClient) -> list[tuple[int, str, dict[str, Any]]]:
    async with chat.gateway.database.transaction() as session:
        rows = await session.execute(
            select(OUTBOX.c.account_id, OUTBOX.c.event, OUTBOX.c.body).order_by(OUTBOX.c.created_at)
        )
        return [(account, event, json.loads(body)["data"]) for account, event, body in rows]


async def test_events_are_registered(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        assert set(EVENTS) <= set(chat.gateway.registry.events)
        assert set(EVENTS) == {
            "conversation.created",
            "conversation.updated",
            "message.created",
            "contact.created",
        }


async def test_changes_emit_their_events(product_client: ProductClientFactory) -> None:
    async with open_chat(product_client) as chat:
        await _subscribe(chat, chat.owner, list(EVENTS))
        await _subscribe(chat, chat.other, list(EVENTS))
        box = await inbox(chat.gateway, chat.owner)
        agent = await chat.agent()
        contact = await chat.contact()
        conversation = await chat.conversation(
            box, contact["id"], agent_id=agent["id"], message={"content": "Hi"}
        )
        updated = await chat.patch(f"/conversations/{conversation['id']}", {"status": "resolved"})
        await chat.patch(f"/conversations/{conversation['id']}", {})
        note = await chat.post(
            f"/conversations/{conversation['id']}/messages", {"content": "n", "private": True}
        )
        outbox = await _outbox(chat)
        assert [(account, event) for account, event, _ in outbox] == [
            (chat.owner.account_id, "contact.created"),
            (chat.owner.account_id, "conversation.created"),
            (chat.owner.account_id, "message.created"),
            (chat.owner.account_id, "conversation.updated"),
            (chat.owner.account_id, "message.created"),
        ]
        assert outbox[0][2] == contact
        assert outbox[1][2] == conversation
        assert outbox[2][2]["content"] == "Hi"
        assert outbox[3][2] == updated
        assert outbox[4][2] == note


async def test_refused_requests_and_unsubscribed_events_leave_nothing(
    product_client: ProductClientFactory,
) -> None:
    async with open_chat(product_client) as chat:
        await _subscribe(chat, chat.owner, ["contact.created"])
        await chat.contact("Ada")
        await chat.post("/contacts", {"name": "Again", "email": "ada@example.com"}, expect=409)
        box = await inbox(chat.gateway, chat.owner)
        contact = await chat.contact("Grace")
        await chat.conversation(box, contact["id"])
        await chat.post(
            "/conversations", {"inbox_id": 999, "contact_id": contact["id"]}, expect=422
        )
        assert [event for _, event, _ in await _outbox(chat)] == [
            "contact.created",
            "contact.created",
        ]
