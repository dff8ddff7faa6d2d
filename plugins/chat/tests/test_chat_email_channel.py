"""The email channel sends through the SMTP server the operator configured, and through
none until one is: no connection to localhost:25, no retries, one failure per message.

Each test makes one delivery attempt itself (lease the due messages, run the job),
without the app's poller, so what an attempt does is seen alone."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from chat_client import tenant
from mail_server import SmtpServer, chat_settings

from tollway import Gateway, claim_due
from tollway.testing import GatewayFactory
from tollway_chat.delivery import LEASE, LEASED, Delivery
from tollway_chat.models import Message
from tollway_chat.schemas import AgentCreate, ContactCreate, ConversationCreate, MessageCreate
from tollway_chat.service import Chat


async def _email_message(gateway: Gateway) -> int:
    """An outgoing message in an email inbox, due for delivery; its id."""
    owner = await tenant(gateway, "acme")

    def chat(session: Any) -> Chat:
        return Chat(session, owner.account_id, gateway.webhooks)

    async with gateway.database.transaction() as session:
        inbox = await chat(session).create_inbox("Mail", "email")
    async with gateway.database.transaction() as session:
        await chat(session).create_agent(AgentCreate(name="Grace", email="grace@acme.example"))
    async with gateway.database.transaction() as session:
        contact = await chat(session).create_contact(ContactCreate("Ada", "ada@example.com"))
    async with gateway.database.transaction() as session:
        conversation = await chat(session).create_conversation(
            ConversationCreate(inbox_id=inbox, contact_id=contact.id)
        )
    async with gateway.database.transaction() as session:
        sent = await chat(session).send_message(conversation.id, MessageCreate("Hello Ada"))
    return sent.id


async def _attempt(gateway: Gateway) -> list[int]:
    """One delivery attempt for every due message; the ids attempted."""
    token, claimed = await claim_due(gateway.database, LEASED, lease=LEASE, limit=10)
    for message_id in claimed:
        await gateway.service(Delivery).deliver(message_id, token)
    return claimed


async def _message(gateway: Gateway, message_id: int) -> Message:
    async with gateway.database.sessions() as session:
        message = await session.get(Message, message_id)
        assert message is not None
        return message


async def test_configured_smtp_delivers(
    gateway_factory: GatewayFactory, smtp_server: SmtpServer
) -> None:
    gateway = await gateway_factory(plugins=["chat"], products=chat_settings(smtp_server.port))
    message_id = await _email_message(gateway)
    assert await _attempt(gateway) == [message_id]
    message = await _message(gateway, message_id)
    assert (message.delivery_status, message.delivery_attempts) == ("sent", 1)
    [envelope] = smtp_server.mailbox.envelopes
    assert envelope.rcpt_tos == ["ada@example.com"]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A listening socket that accepts nothing itself: any connection made to it waits
    in its backlog, where the test can see it."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.setblocking(False)
        yield server


async def test_without_smtp_host_email_fails_at_once_and_connects_nowhere(
    gateway_factory: GatewayFactory, listener: socket.socket, caplog: pytest.LogCaptureFixture
) -> None:
    # smtp_port alone, pointing at the listener: a channel that fell back to a default
    # host (localhost) would connect there.
    settings = {"smtp_port": listener.getsockname()[1], "delivery_retry_schedule": [0, 0]}
    gateway = await gateway_factory(plugins=["chat"], products={"chat": {"settings": settings}})
    message_id = await _email_message(gateway)
    with caplog.at_level(logging.INFO, logger="tollway.chat.delivery"):
        assert await _attempt(gateway) == [message_id]
        assert await _attempt(gateway) == []  # not due again: no retry
    message = await _message(gateway, message_id)
    assert (message.delivery_status, message.delivery_attempts) == ("failed", 1)
    assert "smtp_host" in (message.delivery_error or "")
    logged = [r.getMessage() for r in caplog.records if r.name == "tollway.chat.delivery"]
    assert logged == [f"chat message {message_id} not delivered: {message.delivery_error}"]
    with pytest.raises(BlockingIOError):
        listener.accept()
