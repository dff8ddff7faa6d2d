"""Delivering outgoing messages through their inbox's channel, durably.

An outgoing, non-private message is stored ``pending`` and due at once, in the same
transaction that adds it: the message row is its own outbox entry (the core's
``LeasedColumns`` and ``Poller``). Every gateway process polls for due messages every
``[products.chat.settings] delivery_poll_interval`` seconds (default 2), and at once
when a transaction that added one commits; it leases what it finds and hands each to
job ``chat.deliver`` (``gateway.jobs``). The job renews the lease, loads message,
conversation, inbox and contact, sends through the channel and records the outcome on
the message: ``delivery_status`` pending -> sent | failed, ``delivery_attempts``,
``delivery_error``. A failed send becomes due again after the next delay of
``delivery_retry_schedule`` (seconds, default ``[1, 5, 30, 120, 600]``); after the last
one the message is ``failed``, and so it is at once when the channel says retrying
cannot help (``ChannelError.retry`` false: the email channel without ``smtp_host``).

Pending work lives in the database, not in a process: a restart, or a process killed
mid-send, leaves a lease that lapses and another poll sends the message again. Delivery
is therefore at least once; email carries the message id in ``X-Tollway-Message-Id``
and stream events carry it as their ``id``. Nothing here runs in or blocks the API call
that added the message.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import LeasedColumns, Poller, claim_due, renew, utcnow
from tollway_chat.bus import StreamBus, stream_bus
from tollway_chat.channels import Channel, ChannelError, OutboundMessage
from tollway_chat.models import Conversation, Inbox, Message
from tollway_chat.settings import ChatSettings

if TYPE_CHECKING:
    from tollway import Gateway

log = logging.getLogger("tollway.chat.delivery")

JOB = "chat.deliver"
PENDING, SENT, FAILED = "pending", "sent", "failed"
BATCH_SIZE = 100
LEASE = timedelta(seconds=60)
"""How long one attempt may hold a message: channels time out well within it (SMTP's
``smtp_timeout`` defaults to 10 s)."""

LEASED = LeasedColumns(
    model=Message,
    id=Message.id,
    pending=Message.delivery_status == PENDING,
    due_at=Message.delivery_due_at,
    lease_until=Message.delivery_lease_until,
    lease_token=Message.delivery_lease_token,
)


class Delivery:
    """The gateway's chat delivery: the poller leasing due messages, the job sending
    them, and the stream bus the live_chat channel publishes on (a service: the gateway
    starts and stops it)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        settings = gateway.product_settings(ChatSettings)
        self.retry_schedule = settings.delivery_retry_schedule
        self.bus: StreamBus = stream_bus(gateway.settings.redis_url, settings.stream_channel_prefix)
        self._channels: dict[str, Channel | None] = {}
        self.poller = Poller(
            "tollway-chat-delivery",
            self.dispatch_due,
            interval=settings.delivery_poll_interval,
            batch=BATCH_SIZE,
        )

    async def start(self) -> None:
        await self.bus.start()
        await self.poller.start()

    async def stop(self) -> None:
        """Stop polling (messages not yet sent stay ``pending`` for the next start or
        another process) and close the stream bus."""
        await self.poller.stop()
        await self.bus.stop()

    # Scheduling ---------------------------------------------------------------------

    def after_commit(self, session: AsyncSession, message_id: int) -> None:
        """Look for due messages as soon as ``session``'s transaction commits; the
        message is already due in the database, so this only saves the poll delay."""
        self.poller.wake_after_commit(session)

    async def dispatch_due(self) -> int:
        """Lease up to a batch of due messages and enqueue their attempts."""
        token, claimed = await claim_due(
            self.gateway.database, LEASED, lease=LEASE, limit=BATCH_SIZE
        )
        for message_id in claimed:
            await self.gateway.jobs.enqueue(JOB, message_id=message_id, lease_token=token)
        return len(claimed)

    # The job ------------------------------------------------------------------------

    def channel(self, channel_type: str) -> Channel | None:
        if channel_type not in self._channels:
            self._channels[channel_type] = self.gateway.plugins.hook.tollway_chat_channel(
                channel_type=channel_type, gateway=self.gateway
            )
        return self._channels[channel_type]

    async def _claimed(self, message_id: int, lease_token: str) -> tuple[OutboundMessage, int]:
        async with self.gateway.database.transaction() as session:
            if not await renew(session, LEASED, message_id, lease_token, LEASE):
                raise LookupError("taken over or finished")
            message, conversation, inbox = (
                await session.execute(
                    select(Message, Conversation, Inbox)
                    .join(Conversation, Conversation.id == Message.conversation_id)
                    .join(Inbox, Inbox.id == Conversation.inbox_id)
                    .where(Message.id == message_id)
                )
            ).one()
            contact = conversation.contact
            outbound = OutboundMessage(
                id=message.id,
                account_id=message.account_id,
                conversation_id=conversation.id,
                inbox_id=inbox.id,
                inbox_name=inbox.name,
                channel_type=inbox.channel_type,
                contact_id=contact.id,
                contact_name=contact.name,
                contact_email=contact.email,
                contact_phone=contact.phone,
                agent_name=message.agent.name if message.agent else None,
                content=message.content,
                created_at=message.created_at.isoformat(),
            )
            return outbound, message.delivery_attempts

    async def _record(self, message_id: int, lease_token: str, values: dict[str, Any]) -> None:
        async with self.gateway.database.transaction() as session:
            await session.execute(
                update(Message)
                .where(Message.id == message_id, Message.delivery_lease_token == lease_token)
                .values(**values, **LEASED.released())
                .execution_options(synchronize_session=False)
            )

    async def deliver(self, message_id: int, lease_token: str) -> None:
        """Job ``chat.deliver``: one attempt at sending ``message_id``, if its lease is
        still ``lease_token``'s."""
        try:
            outbound, attempts = await self._claimed(message_id, lease_token)
        except LookupError:
            log.info("chat message %s was taken over or finished; skipped", message_id)
            return
        attempt = attempts + 1
        try:
            channel = self.channel(outbound.channel_type)
            if channel is None:
                raise LookupError(f"no channel for inbox type {outbound.channel_type!r}")
            await channel.send(outbound)
        except Exception as error:
            text = f"{type(error).__name__}: {error}"[:2000]
            values: dict[str, Any] = {"delivery_attempts": attempt, "delivery_error": text}
            retry = not isinstance(error, ChannelError) or error.retry
            if retry and attempt <= len(self.retry_schedule):
                log.warning("chat message %s attempt %s failed: %s", message_id, attempt, text)
                delay = self.retry_schedule[attempt - 1]
                values.update(
                    delivery_status=PENDING, delivery_due_at=utcnow() + timedelta(seconds=delay)
                )
            else:
                log.error("chat message %s not delivered: %s", message_id, text)
                values.update(delivery_status=FAILED, delivery_due_at=None)
            await self._record(message_id, lease_token, values)
            if values["delivery_status"] == PENDING:
                # The retry is due in the database whatever happens to this process; the
                # timer only saves waiting for the poll that would find it.
                asyncio.get_running_loop().call_later(delay, self.poller.wake)
            return
        await self._record(
            message_id,
            lease_token,
            {
                "delivery_status": SENT,
                "delivery_attempts": attempt,
                "delivery_error": None,
                "delivery_due_at": None,
            },
        )
