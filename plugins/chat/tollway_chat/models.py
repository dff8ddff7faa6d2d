"""Tables of the chat product; every row carries the account it belongs to."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from tollway import Account, Tally, UTCDateTime, make_metadata, utcnow


class ChatBase(DeclarativeBase):
    metadata = make_metadata()


class Inbox(ChatBase):
    __tablename__ = "chat_inboxes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    channel_type: Mapped[str] = mapped_column(String(40))
    is_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Contact(ChatBase):
    __tablename__ = "chat_contacts"
    __table_args__ = (UniqueConstraint("account_id", "email", name="uq_chat_contacts_email"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    email: Mapped[str | None] = mapped_column(String(320), nullable=True)
    phone: Mapped[str | None] = mapped_column(String(16), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Agent(ChatBase):
    __tablename__ = "chat_agents"
    __table_args__ = (UniqueConstraint("account_id", "email", name="uq_chat_agents_email"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    email: Mapped[str] = mapped_column(String(320))
    role: Mapped[str] = mapped_column(String(20), default="agent")
    availability: Mapped[str] = mapped_column(String(20), default="offline")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Conversation(ChatBase):
    __tablename__ = "chat_conversations"
    __table_args__ = (
        # Lists are most recent activity first, all of them or by status: these serve
        # the order and the page's offset from the index alone (the totals: the tally below).
        Index("ix_chat_conversations_activity", "account_id", "last_activity_at", "id"),
        Index(
            "ix_chat_conversations_status_activity",
            "account_id",
            "status",
            "last_activity_at",
            "id",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    inbox_id: Mapped[int] = mapped_column(ForeignKey(Inbox.id, ondelete="CASCADE"), index=True)
    contact_id: Mapped[int] = mapped_column(ForeignKey(Contact.id, ondelete="CASCADE"), index=True)
    agent_id: Mapped[int | None] = mapped_column(
        ForeignKey(Agent.id, ondelete="SET NULL"), index=True, nullable=True
    )
    status: Mapped[str] = mapped_column(String(20), default="open")
    unread_count: Mapped[int] = mapped_column(Integer, default=0)
    last_activity_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    contact: Mapped[Contact] = relationship(lazy="joined", innerjoin=True)
    agent: Mapped[Agent | None] = relationship(lazy="joined")


NO_AGENT = 0
"""How the conversation counts store "no agent" (agent ids start at 1)."""
CONVERSATION_TALLY = Tally(
    "chat_conversation_counts",
    "chat_conversations",
    ("account_id", "status", "inbox_id", "agent_id"),
    nulls={"agent_id": NO_AGENT},
)
"""The conversation list's totals, for every combination of its filters."""
CONVERSATION_COUNTS = Table(
    CONVERSATION_TALLY.name,
    ChatBase.metadata,
    Column("account_id", ForeignKey(Account.id, ondelete="CASCADE"), primary_key=True),
    Column("status", String(20), primary_key=True),
    Column("inbox_id", Integer, primary_key=True),
    Column("agent_id", Integer, primary_key=True),
    Column("n", Integer, nullable=False),
)
"""Written by :data:`CONVERSATION_TALLY`'s triggers only (migration 0005)."""


class Message(ChatBase):
    __tablename__ = "chat_messages"
    __table_args__ = (Index("ix_chat_messages_delivery_due", "delivery_status", "delivery_due_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey(Conversation.id, ondelete="CASCADE"), index=True
    )
    type: Mapped[str] = mapped_column(String(20))
    content: Mapped[str] = mapped_column(Text)
    private: Mapped[bool] = mapped_column(Boolean, default=False)
    contact_id: Mapped[int | None] = mapped_column(
        ForeignKey(Contact.id, ondelete="SET NULL"), nullable=True
    )
    agent_id: Mapped[int | None] = mapped_column(
        ForeignKey(Agent.id, ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivery_status: Mapped[str | None] = mapped_column(String(20), nullable=True)
    """``pending``, ``sent`` or ``failed`` for outgoing non-private messages; else null."""
    delivery_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    delivery_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    delivery_due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    """When the next attempt is due (pending messages only)."""
    delivery_lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    delivery_lease_token: Mapped[str | None] = mapped_column(String(32), nullable=True)

    contact: Mapped[Contact | None] = relationship(lazy="joined")
    agent: Mapped[Agent | None] = relationship(lazy="joined")
