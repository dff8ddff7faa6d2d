"""Wire types (msgspec Structs) of the chat product.

Request structs forbid unknown fields and carry their constraints as ``msgspec.Meta``
annotations; rules the schema cannot express (ids of the caller's account, unique
emails, no NUL characters) are checked by the routes and ``tollway_chat.service``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from tollway import MAX_ROW_ID

__all__ = [
    "Agent",
    "AgentCreate",
    "AgentList",
    "AgentRef",
    "Contact",
    "ContactCreate",
    "ContactList",
    "ContactMessageCreate",
    "ContactRef",
    "Conversation",
    "ConversationCreate",
    "ConversationStatus",
    "ConversationUpdate",
    "Inbox",
    "InboxList",
    "Message",
    "MessageCreate",
    "MessageList",
    "OpeningMessage",
    "Sender",
    "StreamToken",
]

ConversationStatus = Literal["open", "resolved", "pending", "snoozed"]
Role = Literal["agent", "administrator"]
RowId = Annotated[int, msgspec.Meta(ge=1, le=MAX_ROW_ID)]
"""A row id in a body: what the database's integer primary keys can hold."""
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Email = Annotated[
    str, msgspec.Meta(min_length=3, max_length=320, pattern=r"^[^@\s\x00]+@[^@\s\x00]+$")
]
Phone = Annotated[str, msgspec.Meta(pattern=r"^\+[1-9]\d{1,14}$")]
Content = Annotated[str, msgspec.Meta(min_length=1, max_length=20_000)]


class ContactRef(msgspec.Struct):
    id: int
    name: str
    email: str | None


class AgentRef(msgspec.Struct):
    id: int
    name: str


class Conversation(msgspec.Struct):
    id: int
    status: str
    inbox_id: int
    contact: ContactRef
    assigned_agent: AgentRef | None
    unread_count: int
    last_activity_at: datetime
    created_at: datetime
    updated_at: datetime


class OpeningMessage(msgspec.Struct, forbid_unknown_fields=True):
    content: Content


class ConversationCreate(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/chat/conversations``."""

    inbox_id: RowId
    contact_id: RowId
    agent_id: RowId | None = None
    status: Literal["open", "pending"] = "open"
    message: OpeningMessage | None = None
    """Sent as an outgoing message of the assigned (or the default) agent."""


class ConversationUpdate(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``PATCH /v1/chat/conversations/{id}``: only the given fields change."""

    status: ConversationStatus | msgspec.UnsetType = msgspec.UNSET
    agent_id: RowId | msgspec.UnsetType | None = msgspec.UNSET
    """An agent's id assigns it; ``null`` unassigns."""


class Sender(msgspec.Struct):
    type: Literal["contact", "agent"]
    id: int
    name: str


class Message(msgspec.Struct):
    id: int
    conversation_id: int
    type: Literal["incoming", "outgoing"]
    content: str
    private: bool
    sender: Sender | None
    """``None`` only when the sending contact or agent was deleted."""
    created_at: datetime


class MessageList(msgspec.Struct):
    data: list[Message]
    total: int


class MessageCreate(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/chat/conversations/{id}/messages``."""

    content: Content
    private: bool = False
    agent_id: RowId | None = None
    """``None``: the account's default agent (see ``service.default_agent``)."""


class Contact(msgspec.Struct):
    id: int
    name: str
    email: str | None
    phone: str | None
    conversation_count: int
    created_at: datetime


class ContactList(msgspec.Struct):
    data: list[Contact]
    total: int


class ContactCreate(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/chat/contacts``."""

    name: Name
    email: Email | None = None
    """Unique within the account."""
    phone: Phone | None = None
    """E.164: ``+`` then up to 15 digits."""


class Agent(msgspec.Struct):
    id: int
    name: str
    email: str
    role: str
    availability: str


class AgentList(msgspec.Struct):
    data: list[Agent]
    total: int


class AgentCreate(msgspec.Struct, forbid_unknown_fields=True):
    """Body of ``POST /v1/chat/agents``; a new agent is offline."""

    name: Name
    email: Email
    """Unique within the account."""
    role: Role = "agent"


class Inbox(msgspec.Struct):
    id: int
    name: str
    channel_type: str
    is_enabled: bool


class InboxList(msgspec.Struct):
    data: list[Inbox]


class ContactMessageCreate(msgspec.Struct, forbid_unknown_fields=True):
    """A live_chat contact writing in (``POST /v1/chat/stream/messages``)."""

    content: Content
    conversation_id: RowId | None = None


class StreamToken(msgspec.Struct):
    """A contact's credential for ``GET /v1/chat/stream?token=...``."""

    token: str
    contact_id: int
    expires_at: datetime
