"""Chat events reach the webhook outbox in the transaction of the change that caused
them: for subscribed endpoints of the account only, and never for a refused request."""

from __future__ import annotations

from chat_client import inbox, open_chat

from tollway.testing import ProductClientFactory, emitted, subscribe
from tollway_chat.product import EVENTS


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
        await subscribe(chat.gateway, chat.owner.account_id, list(EVENTS))
        await subscribe(chat.gateway, chat.other.account_id, list(EVENTS))
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
        outbox = await emitted(chat.gateway)
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
        await subscribe(chat.gateway, chat.owner.account_id, ["contact.created"])
        await chat.contact("Ada")
        await chat.post("/contacts", {"name": "Again", "email": "ada@example.com"}, expect=409)
        box = await inbox(chat.gateway, chat.owner)
        contact = await chat.contact("Grace")
        await chat.conversation(box, contact["id"])
        await chat.post(
            "/conversations", {"inbox_id": 999, "contact_id": contact["id"]}, expect=422
        )
        assert [event for _, event, _ in await emitted(chat.gateway)] == [
            "contact.created",
            "contact.created",
        ]
