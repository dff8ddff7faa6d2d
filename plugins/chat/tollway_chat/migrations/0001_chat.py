"""The chat tables: inboxes, contacts, agents, conversations and messages.

Revision ID: 0001_chat
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import UTCDateTime

revision = "0001_chat"
down_revision = None
branch_labels = ("chat",)
depends_on = "0001_core"


def _id_and_account(table: str) -> list[sa.Column[int] | sa.Constraint]:
    return [
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f(f"fk_{table}_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
    ]


def _foreign_key(table: str, column: str, target: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=op.f(f"fk_{table}_{column}_{target}"), ondelete=ondelete
    )


def upgrade() -> None:
    op.create_table(
        "chat_inboxes",
        *_id_and_account("chat_inboxes"),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("channel_type", sa.String(length=40), nullable=False),
        sa.Column("is_enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "chat_contacts",
        *_id_and_account("chat_contacts"),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=True),
        sa.Column("phone", sa.String(length=16), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("account_id", "email", name="uq_chat_contacts_email"),
    )
    op.create_table(
        "chat_agents",
        *_id_and_account("chat_agents"),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("availability", sa.String(length=20), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("account_id", "email", name="uq_chat_agents_email"),
    )
    op.create_table(
        "chat_conversations",
        *_id_and_account("chat_conversations"),
        sa.Column("inbox_id", sa.Integer(), nullable=False),
        sa.Column("contact_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("unread_count", sa.Integer(), nullable=False),
        sa.Column("last_activity_at", UTCDateTime(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        _foreign_key("chat_conversations", "inbox_id", "chat_inboxes", "CASCADE"),
        _foreign_key("chat_conversations", "contact_id", "chat_contacts", "CASCADE"),
        _foreign_key("chat_conversations", "agent_id", "chat_agents", "SET NULL"),
    )
    op.create_table(
        "chat_messages",
        *_id_and_account("chat_messages"),
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=20), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("private", sa.Boolean(), nullable=False),
        sa.Column("contact_id", sa.Integer(), nullable=True),
        sa.Column("agent_id", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        _foreign_key("chat_messages", "conversation_id", "chat_conversations", "CASCADE"),
        _foreign_key("chat_messages", "contact_id", "chat_contacts", "SET NULL"),
        _foreign_key("chat_messages", "agent_id", "chat_agents", "SET NULL"),
    )
    for table, columns in _INDEXES.items():
        for column in columns:
            op.create_index(op.f(f"ix_{table}_{column}"), table, [column])


_INDEXES = {
    "chat_inboxes": ["account_id"],
    "chat_contacts": ["account_id"],
    "chat_agents": ["account_id"],
    "chat_conversations": ["account_id", "inbox_id", "contact_id", "agent_id"],
    "chat_messages": ["account_id", "conversation_id"],
}


def downgrade() -> None:
    for table in reversed(_INDEXES):
        for column in _INDEXES[table]:
            op.drop_index(op.f(f"ix_{table}_{column}"), table_name=table)
        op.drop_table(table)
