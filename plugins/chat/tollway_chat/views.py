"""How the chat tables' rows are shown on the wire (:mod:`tollway_chat.schemas`)."""

from __future__ import annotations

import msgspec

from tollway_chat import schemas
from tollway_chat.models import Agent, Contact, Conversation


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


def agent_view(agent: Agent) -> schemas.Agent:
    return msgspec.convert(agent, schemas.Agent, from_attributes=True)


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
