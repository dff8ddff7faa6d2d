"""Indexes for listing conversations, most recent activity first, all or by status.

Revision ID: 0004_chat_list_indexes
"""

from __future__ import annotations

from alembic import op

revision = "0004_chat_list_indexes"
down_revision = "0003_chat_delivery_lease"
branch_labels = None
depends_on = None

_INDEXES = {
    "ix_chat_conversations_activity": ["account_id", "last_activity_at", "id"],
    "ix_chat_conversations_status_activity": ["account_id", "status", "last_activity_at", "id"],
}


def upgrade() -> None:
    for name, columns in _INDEXES.items():
        op.create_index(name, "chat_conversations", columns)


def downgrade() -> None:
    for name in reversed(_INDEXES):
        op.drop_index(name, table_name="chat_conversations")
