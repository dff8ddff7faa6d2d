"""Delivering outgoing messages through their inbox's channel, after the commit.

``Chat`` asks for a delivery when it adds an outgoing, non-private message; once that
transaction commits, job ``chat.deliver`` (``gateway.jobs``) gets the message id. The
job loads message, conversation, inbox and contact, sends through the channel and
records the outcome on the message (``delivery_status`` pending -> sent | failed,
``delivery_attempts``, ``delivery_error``). A failed send is enqueued again after the
next delay of ``[products.chat.settings] delivery_retry_schedule`` (seconds, default
``[1, 5, 30]``); after the last one the message is ``failed``. Nothing here runs in
or blocks the API call that added the message.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import TYPE_CHECKING, Any

from sqlalchemy import event as sqlalchemy_event
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from tollway_chat.channels import Channel, OutboundMessage, StreamHub
from tollway_chat.models import Conversation, Inbox, Message

if TYPE_CHECKING:
    from tollway import Gateway

log = logging.getLogger("tollway.chat.delivery")

JOB = "chat.deliver"
PENDING, SENT, FAILED = "pending", "sent", "failed"
_PENDING_IDS = "tollway_chat.deliver_after_commit"
_LISTENING = "tollway_chat.delivery_listening"
DEFAULT_RETRY_SCHEDULE = (1.0, 5.0, 30.0)

_deliveries: weakref.WeakKeyDictionary[Any, Delivery] = weakref.WeakKeyDictionary()


def delivery_for(gateway: Gateway) -> Delivery:
    """The gateway's delivery (one per gateway, made on first use)."""
    delivery = _deliveries.get(gateway)
    if delivery is None:
        delivery = _deliveries[gateway] = Delivery(gateway)
    return delivery


class Delivery:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        settings = gateway.settings.product("chat").settings
        schedule = tuple(
            float(s) for s in settings.get("delivery_retry_schedule", DEFAULT_RETRY_SCHEDULE)
        )
        if any(delay < 0 for delay in schedule):
            raise ValueError("delivery_retry_schedule must list delays >= 0")
        self.retry_schedule = schedule
        self.hub = StreamHub()
        self._channels: dict[str, Channel | None] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def register_job(self) -> None:
        self.gateway.jobs.register(JOB, self.deliver)

    # Scheduling ---------------------------------------------------------------------

    def after_commit(self, session: AsyncSession, message_id: int) -> None:
        """Enqueue the delivery of ``message_id`` once ``session``'s transaction commits
        (nothing if it rolls back)."""
        info = session.info
        info.setdefault(_PENDING_IDS, []).append(message_id)
        if info.get(_LISTENING):
            return
        info[_LISTENING] = True

        def committed(sync_session: Session) -> None:
            for pending in sync_session.info.pop(_PENDING_IDS, []):
                self._spawn(self._enqueue(pending, 1))

        def rolled_back(sync_session: Session) -> None:
            sync_session.info.pop(_PENDING_IDS, None)

        sqlalchemy_event.listen(session.sync_session, "after_commit", committed)
        sqlalchemy_event.listen(session.sync_session, "after_rollback", rolled_back)

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _enqueue(self, message_id: int, attempt: int, delay: float = 0.0) -> None:
        try:
            if delay:
                await asyncio.sleep(delay)
            await self.gateway.jobs.enqueue(JOB, message_id=message_id, attempt=attempt)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("could not enqueue delivery of chat message %s", message_id)

    async def stop(self) -> None:
        """Drop scheduled retries (the messages stay ``pending``)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    # The job ------------------------------------------------------------------------

    def channel(self, channel_type: str) -> Channel | None:
        if channel_type not in self._channels:
            self._channels[channel_type] = self.gateway.plugins.hook.tollway_chat_channel(
                channel_type=channel_type, gateway=self.gateway
            )
        return self._channels[channel_type]

    async def _load(self, message_id: int) -> OutboundMessage | None:
        async with self.gateway.database.transaction() as session:
            row = (
                await session.execute(
                    select(Message, Conversation, Inbox)
                    .join(Conversation, Conversation.id == Message.conversation_id)
                    .join(Inbox, Inbox.id == Conversation.inbox_id)
                    .where(Message.id == message_id)
                )
            ).first()
            if row is None:
                return None
            message, conversation, inbox = row
            if message.delivery_status != PENDING or message.private:
                return None
            contact = conversation.contact
            return OutboundMessage(
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

    async def _record(self, message_id: int, attempt: int, status: str, error: str | None) -> None:
        async with self.gateway.database.transaction() as session:
            await session.execute(
                update(Message)
                .where(Message.id == message_id)
                .values(delivery_status=status, delivery_attempts=attempt, delivery_error=error)
            )

    async def deliver(self, message_id: int, attempt: int = 1) -> None:
        """Job ``chat.deliver``: one attempt at sending ``message_id``."""
        outbound = await self._load(message_id)
        if outbound is None:
            return
        try:
            channel = self.channel(outbound.channel_type)
            if channel is None:
                raise LookupError(f"no channel for inbox type {outbound.channel_type!r}")
            await channel.send(outbound)
        except Exception as error:
            text = f"{type(error).__name__}: {error}"[:2000]
            retry = attempt <= len(self.retry_schedule)
            await self._record(message_id, attempt, PENDING if retry else FAILED, text)
            if retry:
                log.warning("chat message %s attempt %s failed: %s", message_id, attempt, text)
                delay = self.retry_schedule[attempt - 1]
                self._spawn(self._enqueue(message_id, attempt + 1, delay))
            else:
                log.error("chat message %s not delivered: %s", message_id, text)
            return
        await self._record(message_id, attempt, SENT, None)
