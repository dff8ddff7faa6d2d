"""Delivering outgoing messages through their inbox's channel, durably.

An outgoing, non-private message is stored ``pending`` and due at once, in the same
transaction that adds it: the message row is its own outbox entry (the core's
``LeasedColumns`` and ``Poller``). Every gateway process polls for due messages every
``[products.chat.settings] delivery_poll_interval`` seconds (default 2), and at once
when a transaction that added one commits; it leases what it finds, reads what sending
needs (message, conversation, inbox, contact and agent) in one statement, and hands
each message to job ``chat.deliver`` (``gateway.jobs``) with its lease. The job sends
through the channel (renewing the lease and reading the message again first only if it
waited in the queue until little of the lease was left) and records the outcome on the
message: ``delivery_status`` pending -> sent | failed, ``delivery_attempts``,
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
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

import msgspec
from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import LeasedColumns, Poller, claim_due, renew, utcnow
from tollway_chat.channels import Channel, ChannelError, OutboundMessage
from tollway_chat.models import Agent, Contact, Conversation, Inbox, Message
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

LEASE_MARGIN = timedelta(seconds=30)
"""An attempt starting with less than this left of its lease renews it first."""

LEASED = LeasedColumns(
    model=Message,
    id=Message.id,
    pending=Message.delivery_status == PENDING,
    due_at=Message.delivery_due_at,
    lease_until=Message.delivery_lease_until,
    lease_token=Message.delivery_lease_token,
)


_MESSAGES = cast(Table, Message.__table__)
RECORD = (
    update(_MESSAGES)
    .where(
        _MESSAGES.c.id == bindparam("message_id"),
        _MESSAGES.c.delivery_lease_token == bindparam("lease_token"),
    )
    .values(delivery_lease_until=None, delivery_lease_token=None)
)
"""An attempt's outcome, given as ``delivery_status``, ``delivery_attempts``,
``delivery_error`` and ``delivery_due_at``; nothing if the lease was taken over."""

_OUTBOUND = (
    select(
        Message.id,
        Message.account_id,
        Conversation.id,
        Inbox.id,
        Inbox.name,
        Inbox.channel_type,
        Contact.id,
        Contact.name,
        Contact.email,
        Contact.phone,
        Agent.name,
        Message.content,
        Message.created_at,
        Message.delivery_attempts,
    )
    .join(Conversation, Conversation.id == Message.conversation_id)
    .join(Inbox, Inbox.id == Conversation.inbox_id)
    .join(Contact, Contact.id == Conversation.contact_id)
    .outerjoin(Agent, Agent.id == Message.agent_id)
)
OUTBOUND = _OUTBOUND.where(Message.id.in_(bindparam("ids", expanding=True))).order_by(Message.id)
"""What sending the messages ``ids`` needs, with their attempts so far."""
OUTBOUND_ONE = _OUTBOUND.where(Message.id == bindparam("id"))
"""The same for one message ``id`` (a statement the read path runs on the driver)."""


def _outbound(
    id: int,
    account_id: int,
    conversation_id: int,
    inbox_id: int,
    inbox_name: str,
    channel_type: str,
    contact_id: int,
    contact_name: str,
    contact_email: str | None,
    contact_phone: str | None,
    agent_name: str | None,
    content: str,
    created_at: datetime,
    attempts: int,
) -> tuple[OutboundMessage, int]:
    return OutboundMessage(
        id=id,
        account_id=account_id,
        conversation_id=conversation_id,
        inbox_id=inbox_id,
        inbox_name=inbox_name,
        channel_type=channel_type,
        contact_id=contact_id,
        contact_name=contact_name,
        contact_email=contact_email,
        contact_phone=contact_phone,
        agent_name=agent_name,
        content=content,
        created_at=created_at.isoformat(),
    ), attempts


class Delivery:
    """The gateway's chat delivery: the poller leasing due messages and the job sending
    them (a service: the gateway starts and stops it)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        settings = gateway.product_settings(ChatSettings)
        self.retry_schedule = settings.delivery_retry_schedule
        self._channels: dict[str, Channel | None] = {}
        self.poller = Poller(
            "tollway-chat-delivery",
            self.dispatch_due,
            interval=settings.delivery_poll_interval,
            batch=BATCH_SIZE,
        )

    async def start(self) -> None:
        await self.poller.start()

    async def stop(self) -> None:
        """Stop polling (messages not yet sent stay ``pending`` for the next start or
        another process)."""
        await self.poller.stop()

    # Scheduling ---------------------------------------------------------------------

    def after_commit(self, session: AsyncSession, message_id: int) -> None:
        """Look for due messages as soon as ``session``'s transaction commits; the
        message is already due in the database, so this only saves the poll delay."""
        self.poller.wake_after_commit(session)

    async def dispatch_due(self) -> int:
        """Lease up to a batch of due messages, read what sending them needs in one
        statement, and enqueue their attempts with it."""
        token, claimed = await claim_due(
            self.gateway.database, LEASED, lease=LEASE, limit=BATCH_SIZE
        )
        if not claimed:
            return 0
        leased_until = (utcnow() + LEASE).isoformat()
        reads = self.gateway.database.reads
        loaded = (
            await reads.all(OUTBOUND_ONE, _outbound, id=claimed[0])
            if len(claimed) == 1
            else await reads.all(OUTBOUND, _outbound, ids=claimed)
        )
        for outbound, attempts in loaded:
            await self.gateway.jobs.enqueue(
                JOB,
                message_id=outbound.id,
                lease_token=token,
                outbound=msgspec.to_builtins(outbound),
                attempts_before=attempts,
                leased_until=leased_until,
            )
        return len(claimed)

    # The job ------------------------------------------------------------------------

    def channel(self, channel_type: str) -> Channel | None:
        if channel_type not in self._channels:
            self._channels[channel_type] = self.gateway.plugins.hook.tollway_chat_channel(
                channel_type=channel_type, gateway=self.gateway
            )
        return self._channels[channel_type]

    async def _claimed(self, message_id: int, lease_token: str) -> tuple[OutboundMessage, int]:
        """Renew the lease and read the message: for an attempt whose lease may have run
        out while it waited in the queue."""
        async with self.gateway.database.transaction() as session:
            if not await renew(session, LEASED, message_id, lease_token, LEASE):
                raise LookupError("taken over or finished")
        found = await self.gateway.database.reads.first(OUTBOUND_ONE, _outbound, id=message_id)
        if found is None:
            raise LookupError("deleted")
        return found

    async def _record(self, message_id: int, lease_token: str, values: dict[str, Any]) -> None:
        """Store an attempt's outcome (``values``: the message's four delivery columns)
        and give the lease up, if ``lease_token`` still holds it."""
        async with self.gateway.database.transaction() as session:
            connection = await session.connection()
            await connection.execute(
                RECORD, {"message_id": message_id, "lease_token": lease_token, **values}
            )

    async def deliver(
        self,
        message_id: int,
        lease_token: str,
        outbound: dict[str, Any] | None = None,
        attempts_before: int = 0,
        leased_until: str | None = None,
    ) -> None:
        """Job ``chat.deliver``: one attempt at sending ``message_id``, if its lease is
        still ``lease_token``'s. The dispatcher hands over the message as it read it
        with the lease; a job that starts with less than :data:`LEASE_MARGIN` of that
        lease left renews it and reads the message again first."""
        fresh = leased_until is not None and utcnow() + LEASE_MARGIN < datetime.fromisoformat(
            leased_until
        )
        attempts = attempts_before
        try:
            if outbound is not None and fresh:
                message = msgspec.convert(outbound, OutboundMessage)
            else:
                message, attempts = await self._claimed(message_id, lease_token)
        except LookupError:
            log.info("chat message %s was taken over or finished; skipped", message_id)
            return
        attempt = attempts + 1
        try:
            channel = self.channel(message.channel_type)
            if channel is None:
                raise LookupError(f"no channel for inbox type {message.channel_type!r}")
            await channel.send(message)
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
