"""Delivery of outgoing messages through the inbox channel: email over SMTP to a real
local server (aiosmtpd), live_chat over the contact's Server-Sent Events stream;
retries through the job queue, private notes and incoming messages never sent."""

from __future__ import annotations

import asyncio
import time
from email import message_from_bytes
from typing import Any

import jwt
from chat_client import CHAT, ChatClient, inbox, open_chat, receive, sse_events
from mail_server import SmtpServer, chat_settings
from sqlalchemy import select

from tollway import Gateway, hookimpl
from tollway.testing import ProductClientFactory, free_port
from tollway_chat.channels import OutboundMessage, contact_topic
from tollway_chat.models import Message


async def _delivery(gateway: Gateway, message_id: int) -> Message:
    async with gateway.database.transaction() as session:
        message = await session.scalar(select(Message).where(Message.id == message_id))
        assert message is not None
        return message


async def _settled(gateway: Gateway, message_id: int, within: float = 10.0) -> Message:
    deadline = time.monotonic() + within
    while True:
        message = await _delivery(gateway, message_id)
        if message.delivery_status != "pending" or time.monotonic() > deadline:
            return message
        await asyncio.sleep(0.05)


async def _email_conversation(chat: ChatClient) -> tuple[dict[str, Any], str]:
    box = await inbox(chat.gateway, chat.owner, "Mail", channel="email")
    await chat.agent("Grace")
    contact = await chat.contact("Ada")
    conversation = await chat.conversation(box, contact["id"])
    return conversation, f"/conversations/{conversation['id']}/messages"


async def test_email_reaches_the_smtp_server(
    product_client: ProductClientFactory, smtp_server: SmtpServer
) -> None:
    async with open_chat(product_client, products=chat_settings(smtp_server.port)) as chat:
        _, path = await _email_conversation(chat)
        sent = await chat.post(path, {"content": "Hello Ada,\nyour order shipped."})
        assert "delivery_status" not in sent  # the API's message is unchanged
        message = await _settled(chat.gateway, sent["id"])
        assert (message.delivery_status, message.delivery_attempts) == ("sent", 1)
        assert message.delivery_error is None
        [envelope] = smtp_server.mailbox.envelopes
        assert envelope.rcpt_tos == ["ada@example.com"]
        assert envelope.mail_from == "support@acme.example"
        mail = message_from_bytes(envelope.content)
        assert mail["To"] == "ada@example.com"
        body = mail.get_payload(decode=True).decode().replace("\r\n", "\n")
        assert body.strip() == "Hello Ada,\nyour order shipped."


async def test_a_message_is_sent_as_soon_as_its_request_commits(
    product_client: ProductClientFactory, smtp_server: SmtpServer
) -> None:
    # No poll comes within the test: only the wake after the request's commit sends.
    products = chat_settings(smtp_server.port, delivery_poll_interval=3600)
    async with open_chat(product_client, products=products) as chat:
        _, path = await _email_conversation(chat)
        sent = await chat.post(path, {"content": "At once"})
        assert (await _settled(chat.gateway, sent["id"], within=5)).delivery_status == "sent"


async def test_first_message_of_a_new_conversation_is_delivered(
    product_client: ProductClientFactory, smtp_server: SmtpServer
) -> None:
    async with open_chat(product_client, products=chat_settings(smtp_server.port)) as chat:
        box = await inbox(chat.gateway, chat.owner, "Mail", channel="email")
        await chat.agent("Grace")
        contact = await chat.contact("Bob")
        await chat.conversation(box, contact["id"], message={"content": "Welcome"})
        deadline = time.monotonic() + 10
        while not smtp_server.mailbox.envelopes:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        [envelope] = smtp_server.mailbox.envelopes
        assert envelope.rcpt_tos == ["bob@example.com"]


async def test_smtp_down_then_up_is_retried_and_delivered_once(
    product_client: ProductClientFactory,
) -> None:
    server = SmtpServer(free_port())
    products = chat_settings(server.port, delivery_retry_schedule=[0.5, 0.5, 0.5, 0.5, 0.5])
    async with open_chat(product_client, products=products) as chat:
        _, path = await _email_conversation(chat)
        started = time.monotonic()
        sent = await chat.post(path, {"content": "Are you there?"})
        assert time.monotonic() - started < 2  # the failing send does not hold the call
        deadline = time.monotonic() + 5
        while (message := await _delivery(chat.gateway, sent["id"])).delivery_attempts < 1:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        assert message.delivery_status == "pending"
        assert message.delivery_error
        server.start()
        try:
            message = await _settled(chat.gateway, sent["id"])
            assert message.delivery_status == "sent"
            assert message.delivery_attempts >= 2
            assert message.delivery_error is None
            await asyncio.sleep(0.6)  # no further attempt comes after the success
            assert len(server.mailbox.envelopes) == 1
        finally:
            server.stop()


async def test_send_failing_every_time_ends_failed(product_client: ProductClientFactory) -> None:
    products = chat_settings(free_port(), delivery_retry_schedule=[0.05, 0.05])
    async with open_chat(product_client, products=products) as chat:
        _, path = await _email_conversation(chat)
        sent = await chat.post(path, {"content": "Nobody listens"})
        message = await _settled(chat.gateway, sent["id"])
        assert (message.delivery_status, message.delivery_attempts) == ("failed", 3)
        assert "Connect" in (message.delivery_error or "")
        listed = await chat.get(path)
        assert [m["content"] for m in listed["data"]] == ["Nobody listens"]


async def test_private_notes_and_incoming_messages_are_not_sent(
    product_client: ProductClientFactory, smtp_server: SmtpServer
) -> None:
    async with open_chat(product_client, products=chat_settings(smtp_server.port)) as chat:
        conversation, path = await _email_conversation(chat)
        note = await chat.post(path, {"content": "internal", "private": True})
        incoming = await receive(chat.gateway, chat.owner, conversation["id"], "Hi from Ada")
        reply = await chat.post(path, {"content": "public reply"})
        assert (await _settled(chat.gateway, reply["id"])).delivery_status == "sent"
        await asyncio.sleep(0.3)
        assert [e.content for e in smtp_server.mailbox.envelopes if b"internal" in e.content] == []
        assert len(smtp_server.mailbox.envelopes) == 1
        for message_id in (note["id"], incoming.id):
            message = await _delivery(chat.gateway, message_id)
            assert (message.delivery_status, message.delivery_attempts) == (None, 0)


async def test_a_plugin_channel_replaces_the_default(product_client: ProductClientFactory) -> None:
    sent: list[OutboundMessage] = []

    class Recorder:
        async def send(self, message: OutboundMessage) -> None:
            sent.append(message)

    class SmsPlugin:
        @hookimpl
        def tollway_chat_channel(self, channel_type: str, gateway: Gateway) -> Any:
            return Recorder() if channel_type == "sms" else None

    async with open_chat(product_client, extra_plugins=[("sms", SmsPlugin())]) as chat:
        gateway, owner = chat.gateway, chat.owner
        box = await inbox(gateway, owner, "Texts", channel="sms")
        await chat.agent("Grace")
        contact = await chat.contact("Ada", phone="+15551234567")
        conversation = await chat.conversation(box, contact["id"])
        message = await chat.post(
            f"/conversations/{conversation['id']}/messages", {"content": "txt"}
        )
        assert (await _settled(gateway, message["id"])).delivery_status == "sent"
        assert [(m.content, m.contact_phone) for m in sent] == [("txt", "+15551234567")]


# live_chat ------------------------------------------------------------------------


SECRET = "s3cret-long-enough-for-hmac-sha256-keys"


async def test_live_chat_message_reaches_the_contact_stream(
    product_client: ProductClientFactory,
) -> None:
    async with open_chat(product_client, products=chat_settings(free_port())) as chat:
        box = await inbox(chat.gateway, chat.owner, "Website", channel="live_chat")
        await chat.agent("Grace")
        contact = await chat.contact("Ada")
        conversation = await chat.conversation(box, contact["id"])
        issued = await chat.post(f"/contacts/{contact['id']}/stream-token", {})
        assert issued["contact_id"] == contact["id"]
        bus, topic = chat.gateway.live, contact_topic(chat.owner.account_id, contact["id"])
        # No API key: the token is the credential.
        reading = asyncio.create_task(
            chat.client.get(
                f"{CHAT}/stream",
                params={"token": issued["token"], "once": "true", "max_seconds": 20},
            )
        )
        deadline = time.monotonic() + 5
        while not bus.listeners(topic):
            assert time.monotonic() < deadline
            assert not reading.done()
            await asyncio.sleep(0.02)
        await chat.post(
            f"/conversations/{conversation['id']}/messages", {"content": "note", "private": True}
        )
        sent = await chat.post(
            f"/conversations/{conversation['id']}/messages", {"content": "Hi Ada"}
        )
        response = await asyncio.wait_for(reading, 10)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response.text)
        assert [event.get("event") for event in events] == ["ready", "message"]
        assert '"content":"Hi Ada"' in events[1]["data"]
        assert events[1]["id"] == str(sent["id"])
        assert (await _settled(chat.gateway, sent["id"])).delivery_status == "sent"
        assert not bus.listeners(topic)


async def test_live_chat_without_open_stream_is_retried_then_failed(
    product_client: ProductClientFactory,
) -> None:
    products = chat_settings(free_port(), delivery_retry_schedule=[0.05])
    async with open_chat(product_client, products=products) as chat:
        box = await inbox(chat.gateway, chat.owner, "Website", channel="live_chat")
        await chat.agent("Grace")
        contact = await chat.contact("Ada")
        conversation = await chat.conversation(box, contact["id"])
        sent = await chat.post(f"/conversations/{conversation['id']}/messages", {"content": "x"})
        message = await _settled(chat.gateway, sent["id"])
        assert (message.delivery_status, message.delivery_attempts) == ("failed", 2)
        assert "no open stream" in (message.delivery_error or "")


async def test_stream_tokens(product_client: ProductClientFactory) -> None:
    products = chat_settings(free_port(), stream_secret=SECRET, stream_token_ttl=60)
    async with open_chat(product_client, products=products) as chat:
        contact = await chat.contact("Ada")
        stream = f"{CHAT}/stream"
        assert (await chat.client.get(stream)).status_code == 400
        for token in (
            "not-a-token",
            jwt.encode(
                {"aud": "tollway-chat-stream", "sub": "1", "acc": 1, "exp": int(time.time()) + 60},
                "another-secret-" + SECRET,
                algorithm="HS256",
            ),
            jwt.encode(  # expired
                {
                    "aud": "tollway-chat-stream",
                    "sub": str(contact["id"]),
                    "acc": chat.owner.account_id,
                    "exp": int(time.time()) - 10,
                },
                SECRET,
                algorithm="HS256",
            ),
        ):
            response = await chat.client.get(stream, params={"token": token})
            assert response.status_code == 401, response.text
        # Another account's contact is unknown to this key; an unknown one too.
        foreign = await chat.client.post(
            f"{CHAT}/contacts/{contact['id']}/stream-token", json={}, headers=chat.other.headers
        )
        assert foreign.status_code == 404
        await chat.post("/contacts/999999/stream-token", {}, expect=404)
        # A valid token opens a stream that ends after max_seconds with only "ready".
        issued = await chat.post(f"/contacts/{contact['id']}/stream-token", {})
        response = await chat.client.get(
            stream, params={"token": issued["token"], "max_seconds": 1}
        )
        assert response.status_code == 200
        assert [event.get("event") for event in sse_events(response.text)] == ["ready"]


async def test_stream_token_expires(product_client: ProductClientFactory) -> None:
    products = chat_settings(free_port(), stream_token_ttl=1)
    async with open_chat(product_client, products=products) as chat:
        contact = await chat.contact("Ada")
        issued = await chat.post(f"/contacts/{contact['id']}/stream-token", {})
        await asyncio.sleep(2.1)
        response = await chat.client.get(
            f"{CHAT}/stream", params={"token": issued["token"], "max_seconds": 1}
        )
        assert response.status_code == 401
