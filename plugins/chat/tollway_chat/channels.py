"""Channels send a conversation's outgoing messages to its contact.

A channel is what ``tollway_chat_channel`` returns for an inbox's ``channel_type``:
an object with ``async send(message: OutboundMessage)`` that raises on failure (the
delivery job then retries it). This module holds the default channels, registered
like a plugin by the chat plugin:

- ``email``: SMTP through ``aiosmtplib``, configured by ``[products.chat.settings]``
  ``smtp_host`` (default ``localhost``), ``smtp_port`` (25), ``smtp_from``
  (``chat@localhost``), ``smtp_starttls`` (false), ``smtp_username`` / ``smtp_password``
  (optional), ``smtp_timeout`` (10 s).
- ``live_chat``: an in-process fan-out to the contact's open streams
  (``GET /v1/chat/stream``). A contact with no open stream in this process is a failed
  send, retried like any other; the message stays readable in the conversation.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from email.message import EmailMessage
from typing import TYPE_CHECKING, Any, Protocol

import aiosmtplib
import msgspec

from tollway import hookimpl

if TYPE_CHECKING:
    from tollway import Gateway


class OutboundMessage(msgspec.Struct, frozen=True, kw_only=True):
    """An outgoing message on its way to a contact."""

    id: int
    account_id: int
    conversation_id: int
    inbox_id: int
    inbox_name: str
    channel_type: str
    contact_id: int
    contact_name: str
    contact_email: str | None
    contact_phone: str | None
    agent_name: str | None
    content: str
    created_at: str


class ChannelError(Exception):
    """A send that failed; the delivery job retries it."""


class Channel(Protocol):
    async def send(self, message: OutboundMessage) -> None:
        """Send ``message`` to its contact; raise on failure."""
        ...


class EmailChannel:
    def __init__(self, settings: dict[str, Any]) -> None:
        self.host = str(settings.get("smtp_host", "localhost"))
        self.port = int(settings.get("smtp_port", 25))
        self.sender = str(settings.get("smtp_from", "chat@localhost"))
        self.starttls = bool(settings.get("smtp_starttls", False))
        self.username = settings.get("smtp_username")
        self.password = settings.get("smtp_password")
        self.timeout = float(settings.get("smtp_timeout", 10))

    async def send(self, message: OutboundMessage) -> None:
        if not message.contact_email:
            raise ChannelError(f"contact {message.contact_id} has no email address")
        mail = EmailMessage()
        mail["From"] = self.sender
        mail["To"] = message.contact_email
        mail["Subject"] = f"{message.inbox_name}: conversation #{message.conversation_id}"
        mail["X-Tollway-Message-Id"] = str(message.id)
        mail.set_content(message.content)
        await aiosmtplib.send(
            mail,
            hostname=self.host,
            port=self.port,
            start_tls=self.starttls,
            username=self.username,
            password=self.password,
            timeout=self.timeout,
        )


class StreamHub:
    """Open contact streams of this process: ``(account_id, contact_id)`` -> queues."""

    def __init__(self) -> None:
        self._streams: dict[tuple[int, int], set[asyncio.Queue[OutboundMessage]]] = defaultdict(set)

    def subscribe(self, account_id: int, contact_id: int) -> asyncio.Queue[OutboundMessage]:
        queue: asyncio.Queue[OutboundMessage] = asyncio.Queue(maxsize=1000)
        self._streams[(account_id, contact_id)].add(queue)
        return queue

    def unsubscribe(
        self, account_id: int, contact_id: int, queue: asyncio.Queue[OutboundMessage]
    ) -> None:
        key = (account_id, contact_id)
        self._streams[key].discard(queue)
        if not self._streams[key]:
            del self._streams[key]

    def listeners(self, account_id: int, contact_id: int) -> int:
        return len(self._streams.get((account_id, contact_id), ()))

    def publish(self, message: OutboundMessage) -> int:
        queues = self._streams.get((message.account_id, message.contact_id), set())
        delivered = 0
        for queue in list(queues):
            try:
                queue.put_nowait(message)
                delivered += 1
            except asyncio.QueueFull:
                continue
        return delivered


class LiveChatChannel:
    def __init__(self, hub: StreamHub) -> None:
        self.hub = hub

    async def send(self, message: OutboundMessage) -> None:
        if not self.hub.publish(message):
            raise ChannelError(f"contact {message.contact_id} has no open stream")


@hookimpl(trylast=True)
def tollway_chat_channel(channel_type: str, gateway: Gateway) -> Channel | None:
    from tollway_chat.delivery import delivery_for

    if channel_type == "email":
        return EmailChannel(gateway.settings.product("chat").settings)
    if channel_type == "live_chat":
        return LiveChatChannel(delivery_for(gateway).hub)
    return None
