"""Chat events reach the webhook outbox in the transaction of the change that caused
them: for subscribed endpoints of the account only, and never for a refused request."""

from __future__ import annotations

import json
from typing import Any

from chat_accounts import Setup, Tenant, chat_setup, inbox
from sqlalchemy import select

from tollway.testing import GatewayFactory
from tollway.webhooks.models import WebhookEndpoint, WebhookEvent
from tollway_chat.service import EVENTS


async def _subscribe(chat: Setup, owner: Tenant, events: list[str]) -> None:
    async with chat.gateway.database.transaction() as session:
        session.add(
            WebhookEndpoint(
                account_id=owner.account_id,
                url="https://hooks.example.invalid/chat",
                events=events,
                secret="s" * 64,
            )
        )


async def _outbox(chat: Setup) -> list[tuple[int, str, dict[str, Any]]]:
    async with chat.gateway.database.transaction() as session:
        rows = await session.scalars(select(WebhookEvent).order_by(WebhookEvent.created_at))
        return [(row.account_id, row.event, json.loads(row.body)["data"]) for row in rows]


async def test_events_are_registered(gateway_factory: GatewayFactory) -> None:
    async with chat_setup(gateway_factory) as chat:
        assert set(EVENTS) <= set(chat.gateway.registry.events)
        assert set(EVENTS) == {
            "conversation.created",
            "conversation.updated",
            "message.created",
            "contact.created",
        }


async def test_changes_emit_their_events(gateway_factory: GatewayFactory) -> None:
    async with chat_setup(gateway_factory) as chat:
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
    gateway_factory: GatewayFactory,
) -> None:
    async with chat_setup(gateway_factory) as chat:
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
