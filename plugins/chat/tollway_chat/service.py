"""The chat product's rules, on one account's rows inside one transaction.

Every lookup is filtered by the account, so another account's id is simply not found.
Events are emitted through the webhook engine in the same transaction: they are
delivered only if the change commits.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar, cast

import msgspec
from sqlalchemy import Executable, Result, Table, bindparam, exists, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import Conflict, NotFound, UnprocessableEntity, WebhookEngine, utcnow
from tollway_chat import schemas
from tollway_chat.models import Agent, Contact, Conversation, Inbox, Message
from tollway_chat.product import (
    CONTACT_CREATED,
    CONVERSATION_CREATED,
    CONVERSATION_UPDATED,
    MESSAGE_CREATED,
)
from tollway_chat.queries import ACCOUNT
from tollway_chat.views import (
    agent_view,
    contact_view,
    conversation_view,
)

Row = TypeVar("Row", Agent, Contact, Conversation, Inbox)


_IN_CONVERSATION = exists().where(
    Conversation.id == bindparam("conversation_id"), Conversation.account_id == ACCOUNT
)
DEFAULT_SENDER = (
    select(Agent.id, Agent.name)
    .where(Agent.account_id == ACCOUNT, _IN_CONVERSATION)
    .order_by((Agent.role == "administrator").desc(), Agent.id)
    .limit(1)
)
"""The agent a message without ``agent_id`` is sent as: the account's oldest
administrator, else its oldest agent (API keys are not tied to agents)."""
GIVEN_SENDER = select(Agent.id, Agent.name).where(
    Agent.id == bindparam("id"), Agent.account_id == ACCOUNT, _IN_CONVERSATION
)
_MESSAGES = cast(Table, Message.__table__)
_CONVERSATIONS = cast(Table, Conversation.__table__)
INSERT_MESSAGE = insert(_MESSAGES).returning(_MESSAGES.c.id)
_TOUCH = update(_CONVERSATIONS).where(_CONVERSATIONS.c.id == bindparam("conversation_id"))
TOUCH_ON_INCOMING = _TOUCH.values(
    unread_count=_CONVERSATIONS.c.unread_count + 1,
    last_activity_at=bindparam("at"),
    updated_at=bindparam("at"),
)
TOUCH_ON_OUTGOING = _TOUCH.values(
    unread_count=0, last_activity_at=bindparam("at"), updated_at=bindparam("at")
)


def _contact(conversation: Conversation) -> schemas.Sender:
    return schemas.Sender("contact", conversation.contact.id, conversation.contact.name)


class Chat:
    """One account's chat data in ``session``'s transaction."""

    def __init__(
        self,
        session: AsyncSession,
        account_id: int,
        webhooks: WebhookEngine,
        deliver: Callable[[AsyncSession, int], None] | None = None,
    ) -> None:
        """``deliver(session, message_id)`` is called for each outgoing, non-private
        message added (see ``tollway_chat.delivery.Delivery.after_commit``)."""
        self.deliver = deliver
        self.session = session
        self.account_id = account_id
        self.webhooks = webhooks

    async def _core(
        self, statement: Executable, params: dict[str, Any]
    ) -> Result[*tuple[Any, ...]]:
        """A Core statement on the transaction's connection, past the ORM session's
        execution path (which it does not need: it maps no objects)."""
        connection = await self.session.connection()
        return await connection.execute(statement, params)

    async def _emit(self, event: str, data: msgspec.Struct) -> None:
        await self.webhooks.emit(self.session, self.account_id, event, msgspec.to_builtins(data))

    async def _owned(self, model: type[Row], row_id: int) -> Row | None:
        return await self.session.scalar(
            select(model)
            .where(model.id == row_id, model.account_id == self.account_id)
            .execution_options(populate_existing=True)
        )

    # Conversations ------------------------------------------------------------------

    async def conversation(self, conversation_id: int) -> Conversation:
        conversation = await self._owned(Conversation, conversation_id)
        if conversation is None:
            raise NotFound(f"Conversation {conversation_id} not found")
        return conversation

    async def _agent_for(self, requested: int) -> Agent:
        agent_id = requested
        agent = await self._owned(Agent, agent_id)
        if agent is None:
            raise UnprocessableEntity(f"Agent {agent_id} does not exist")
        return agent

    async def default_agent(self) -> Agent:
        """The agent a message without ``agent_id`` is sent as: the account's oldest
        administrator, else its oldest agent (API keys are not tied to agents)."""
        agent = await self.session.scalar(
            select(Agent)
            .where(Agent.account_id == self.account_id)
            .order_by((Agent.role == "administrator").desc(), Agent.id)
            .limit(1)
        )
        if agent is None:
            raise UnprocessableEntity(
                "Cannot send a message: the account has no agent; create one or give agent_id"
            )
        return agent

    async def create_conversation(self, data: schemas.ConversationCreate) -> schemas.Conversation:
        inbox_id, contact_id = data.inbox_id, data.contact_id
        if await self._owned(Inbox, inbox_id) is None:
            raise UnprocessableEntity(f"Inbox {inbox_id} does not exist")
        if await self._owned(Contact, contact_id) is None:
            raise UnprocessableEntity(f"Contact {contact_id} does not exist")
        agent = None if data.agent_id is None else await self._agent_for(data.agent_id)
        sender = None
        if data.message is not None:
            sender = agent or await self.default_agent()
        now = utcnow()
        conversation = Conversation(
            account_id=self.account_id,
            inbox_id=inbox_id,
            contact_id=contact_id,
            agent_id=agent.id if agent else None,
            status=data.status,
            unread_count=0,
            last_activity_at=now,
            created_at=now,
            updated_at=now,
        )
        self.session.add(conversation)
        await self.session.flush()
        view = conversation_view(await self.conversation(conversation.id))
        await self._emit(CONVERSATION_CREATED, view)
        if data.message is not None and sender is not None:
            await self._add_message(
                view.id,
                data.message.content,
                private=False,
                sender=schemas.Sender("agent", sender.id, sender.name),
                at=now,
            )
        return view

    async def update_conversation(
        self, conversation_id: int, data: schemas.ConversationUpdate
    ) -> schemas.Conversation:
        conversation = await self.conversation(conversation_id)
        changes: dict[str, Any] = {}
        if data.status is not msgspec.UNSET:
            changes["status"] = data.status
        if data.agent_id is not msgspec.UNSET:
            agent_id = data.agent_id
            changes["agent_id"] = None if agent_id is None else (await self._agent_for(agent_id)).id
        if changes:
            changes["updated_at"] = utcnow()
            await self.session.execute(
                update(Conversation).where(Conversation.id == conversation.id).values(**changes)
            )
            conversation = await self.conversation(conversation_id)
        view = conversation_view(conversation)
        if changes:
            await self._emit(CONVERSATION_UPDATED, view)
        return view

    # Messages -----------------------------------------------------------------------

    async def send_message(
        self, conversation_id: int, data: schemas.MessageCreate
    ) -> schemas.Message:
        """An outgoing message (or, ``private``, a note) of an agent."""
        sender = await self._sender(conversation_id, data.agent_id)
        return await self._add_message(
            conversation_id, data.content, private=data.private, sender=sender, at=utcnow()
        )

    async def _sender(self, conversation_id: int, agent_id: int | None) -> schemas.Sender:
        """The agent a message in the conversation is sent as (``agent_id``, else the
        default agent), found in the same statement that finds the conversation; 404
        when the conversation is not the account's, 422 when the agent is missing."""
        found = (
            await self._core(
                DEFAULT_SENDER if agent_id is None else GIVEN_SENDER,
                {"account_id": self.account_id, "conversation_id": conversation_id, "id": agent_id},
            )
        ).first()
        if found is not None:
            return schemas.Sender("agent", found[0], found[1])
        await self.conversation(conversation_id)
        if agent_id is None:
            raise UnprocessableEntity(
                "Cannot send a message: the account has no agent; create one or give agent_id"
            )
        raise UnprocessableEntity(f"Agent {agent_id} does not exist")

    async def receive_message(self, conversation_id: int, content: str) -> schemas.Message:
        """An incoming message of the conversation's contact (for the channels)."""
        conversation = await self.conversation(conversation_id)
        return await self._add_message(
            conversation_id, content, private=False, sender=_contact(conversation), at=utcnow()
        )

    async def contact_writes(
        self, contact_id: int, content: str, conversation_id: int | None
    ) -> schemas.Message:
        """An incoming message from a live_chat contact (``POST /v1/chat/stream/messages``)
        in ``conversation_id``, else in the contact's most recently active live_chat
        conversation. A resolved conversation opens again, as it would for an email."""
        query = (
            select(Conversation)
            .join(Inbox, Inbox.id == Conversation.inbox_id)
            .where(
                Conversation.account_id == self.account_id,
                Conversation.contact_id == contact_id,
                Inbox.channel_type == "live_chat",
            )
            .execution_options(populate_existing=True)
        )
        if conversation_id is not None:
            conversation = await self.session.scalar(
                query.where(Conversation.id == conversation_id)
            )
            if conversation is None:
                raise NotFound(f"Conversation {conversation_id} not found")
        else:
            conversation = await self.session.scalar(
                query.order_by(Conversation.last_activity_at.desc(), Conversation.id.desc())
            )
            if conversation is None:
                raise UnprocessableEntity(
                    "The contact has no live_chat conversation; the account starts one with "
                    "POST /v1/chat/conversations"
                )
        if conversation.status == "resolved":
            conversation.status, conversation.updated_at = "open", utcnow()
            await self.session.flush()
            await self._emit(CONVERSATION_UPDATED, conversation_view(conversation))
        return await self._add_message(
            conversation.id, content, private=False, sender=_contact(conversation), at=utcnow()
        )

    async def stream_backlog(self, contact_id: int, after_id: int, limit: int) -> list[Message]:
        """The contact's live_chat messages after ``after_id``, oldest first: what a
        stream reconnecting with ``Last-Event-ID`` missed."""
        return list(
            await self.session.scalars(
                select(Message)
                .join(Conversation, Conversation.id == Message.conversation_id)
                .join(Inbox, Inbox.id == Conversation.inbox_id)
                .where(
                    Message.account_id == self.account_id,
                    Conversation.contact_id == contact_id,
                    Inbox.channel_type == "live_chat",
                    Message.type == "outgoing",
                    Message.private.is_(False),
                    Message.id > after_id,
                )
                .order_by(Message.id)
                .limit(limit)
            )
        )

    async def _add_message(
        self,
        conversation_id: int,
        content: str,
        *,
        private: bool,
        at: datetime,
        sender: schemas.Sender,
    ) -> schemas.Message:
        """Insert the message and touch its conversation: two statements, then the
        ``message.created`` event in the same transaction."""
        incoming = sender.type == "contact"
        pending = not (incoming or private)
        message_id = (
            await self._core(
                INSERT_MESSAGE,
                {
                    "account_id": self.account_id,
                    "conversation_id": conversation_id,
                    "type": "incoming" if incoming else "outgoing",
                    "content": content,
                    "private": private,
                    "agent_id": None if incoming else sender.id,
                    "contact_id": sender.id if incoming else None,
                    "created_at": at,
                    "delivery_status": "pending" if pending else None,
                    "delivery_attempts": 0,
                    "delivery_due_at": at if pending else None,
                },
            )
        ).scalar_one()
        # An incoming message is unread until an agent writes in the conversation.
        await self._core(
            TOUCH_ON_INCOMING if incoming else TOUCH_ON_OUTGOING,
            {"conversation_id": conversation_id, "at": at},
        )
        view = schemas.Message(
            message_id,
            conversation_id,
            "incoming" if incoming else "outgoing",
            content,
            private,
            sender,
            at,
        )
        await self._emit(MESSAGE_CREATED, view)
        if pending and self.deliver is not None:
            self.deliver(self.session, message_id)
        return view

    # Contacts -----------------------------------------------------------------------

    async def create_contact(self, data: schemas.ContactCreate) -> schemas.Contact:
        contact = Contact(
            account_id=self.account_id,
            name=data.name,
            email=data.email,
            phone=data.phone,
            created_at=utcnow(),
        )
        await self._insert(contact, f"A contact with email {data.email} already exists")
        view = contact_view(contact, 0)
        await self._emit(CONTACT_CREATED, view)
        return view

    async def _insert(self, row: Contact | Agent, conflict: str) -> None:
        # The insert is the transaction's first write, so a unique-email violation
        # (which aborts a PostgreSQL transaction) loses nothing: the request's
        # transaction rolls back.
        self.session.add(row)
        try:
            await self.session.flush()
        except IntegrityError:
            raise Conflict(conflict) from None

    # Agents and inboxes ---------------------------------------------------------------

    async def create_agent(self, data: schemas.AgentCreate) -> schemas.Agent:
        agent = Agent(
            account_id=self.account_id,
            name=data.name,
            email=data.email,
            role=data.role,
            availability="offline",
            created_at=utcnow(),
        )
        await self._insert(agent, f"An agent with email {data.email} already exists")
        return agent_view(agent)

    async def create_inbox(self, name: str, channel_type: str, *, enabled: bool = True) -> int:
        inbox = Inbox(
            account_id=self.account_id,
            name=name,
            channel_type=channel_type,
            is_enabled=enabled,
            created_at=utcnow(),
        )
        self.session.add(inbox)
        await self.session.flush()
        return inbox.id
