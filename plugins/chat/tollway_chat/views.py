"""How the chat tables' rows are shown on the wire (:mod:`tollway_chat.schemas`)."""

from __future__ import annotations

import msgspec

from tollway_chat import schemas
from tollway_chat.models import Agent, Contact, Conversation, Inbox, Message


def conversation_view(conversation: Conversation) -> schemas.Conversation:
    contact = conversation.contact
    agent = conversation.agent
    return schemas.Conversation(
        id=conversation.id,
        status=conversation.status,
        inbox_id=conversation.inbox_id,
        contact=schemas.ContactRef(contact.id, contact.name, contact.email),
        assigned_agent=schemas.AgentRef(agent.id, agent.name) if agent else None,
        unread_count=conversation.unread_count,
        last_activity_at=conversation.last_activity_at,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
    )


def message_view(message: Message) -> schemas.Message:
    sender: schemas.Sender | None = None
    if message.agent is not None:
        sender = schemas.Sender("agent", message.agent.id, message.agent.name)
    elif message.contact is not None:
        sender = schemas.Sender("contact", message.contact.id, message.contact.name)
    return schemas.Message(
        id=message.id,
        conversation_id=message.conversation_id,
        type="incoming" if message.type == "incoming" else "outgoing",
        content=message.content,
        private=message.private,
        sender=sender,
        created_at=message.created_at,
    )


def agent_view(agent: Agent) -> schemas.Agent:
    return msgspec.convert(agent, schemas.Agent, from_attributes=True)


def inbox_view(inbox: Inbox) -> schemas.Inbox:
    return msgspec.convert(inbox, schemas.Inbox, from_attributes=True)


def contact_view(contact: Contact, conversation_count: int) -> schemas.Contact:
    """``contact`` with how many conversations it has (a count the query made)."""
    return schemas.Contact(
        id=contact.id,
        name=contact.name,
        email=contact.email,
        phone=contact.phone,
        conversation_count=conversation_count,
        created_at=contact.created_at,
    )
