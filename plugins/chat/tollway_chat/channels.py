"""Channels send a conversation's outgoing messages to its contact.

A channel is what ``tollway_chat_channel`` returns for an inbox's ``channel_type``:
an object with ``async send(message: OutboundMessage)`` that raises on failure (the
delivery job then retries it, unless the error is a :class:`ChannelError` whose
``retry`` is false). This module holds the default channels, registered like a plugin
by the chat plugin:

- ``email``: SMTP through ``aiosmtplib``, configured by ``[products.chat.settings]``
  ``smtp_host`` (no default), ``smtp_port`` (25), ``smtp_from`` (``chat@localhost``),
  ``smtp_starttls`` (false), ``smtp_username`` / ``smtp_password`` (optional),
  ``smtp_timeout`` (10 s). Until ``smtp_host`` is set it connects nowhere: each email
  message fails at once (:class:`ChannelNotConfigured`), with no retries.
- ``live_chat``: published on the gateway's real-time bus (``gateway.live``), topic
  ``chat:<account>:<contact>`` (:func:`contact_topic`), to the contact's open streams
  (``GET /v1/chat/stream``) on any gateway process. A contact with no stream open
  anywhere is a failed send, retried like any other; the message stays readable in the
  conversation, and a stream that reconnects with ``Last-Event-ID`` gets what it
  missed.
"""

from __future__ import annotations

from email.message import EmailMessage
from typing import TYPE_CHECKING, ClassVar, Protocol

import aiosmtplib
import msgspec

from tollway import hookimpl
from tollway_chat.settings import ChatSettings

if TYPE_CHECKING:
    from tollway import Gateway, LiveBus


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
    """A send that failed; the delivery job retries it if ``retry``."""

    retry: ClassVar[bool] = True


class ChannelNotConfigured(ChannelError):
    """The channel cannot send anything until the operator configures it: retrying
    cannot help, so the message fails at once."""

    retry = False


class Channel(Protocol):
    async def send(self, message: OutboundMessage) -> None:
        """Send ``message`` to its contact; raise on failure."""
        ...


class EmailChannel:
    def __init__(self, settings: ChatSettings) -> None:
        self.host = settings.smtp_host or None
        self.port = settings.smtp_port
        self.sender = settings.smtp_from
        self.starttls = settings.smtp_starttls
        self.username = settings.smtp_username
        self.password = settings.smtp_password
        self.timeout = settings.smtp_timeout

    async def send(self, message: OutboundMessage) -> None:
        if self.host is None:
            raise ChannelNotConfigured(
                "the email channel is not configured: set smtp_host in [products.chat.settings]"
            )
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


def contact_topic(account_id: int, contact_id: int) -> str:
    """The real-time bus topic of a contact's streams; its payloads are
    :class:`OutboundMessage` as JSON."""
    return f"chat:{account_id}:{contact_id}"


class LiveChatChannel:
    def __init__(self, bus: LiveBus) -> None:
        self.bus = bus

    async def send(self, message: OutboundMessage) -> None:
        topic = contact_topic(message.account_id, message.contact_id)
        if not await self.bus.publish(topic, msgspec.json.encode(message)):
            raise ChannelError(f"contact {message.contact_id} has no open stream")


@hookimpl(trylast=True)
def tollway_chat_channel(channel_type: str, gateway: Gateway) -> Channel | None:
    if channel_type == "email":
        return EmailChannel(gateway.product_settings(ChatSettings))
    if channel_type == "live_chat":
        return LiveChatChannel(gateway.live)
    return None
