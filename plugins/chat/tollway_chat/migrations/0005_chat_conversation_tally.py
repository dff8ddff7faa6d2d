"""Conversation counts per account, status, inbox and agent, kept by triggers: the
conversation list's totals without counting rows. Conversations already there are
counted.

Revision ID: 0005_chat_conversation_tally
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import Tally

revision = "0005_chat_conversation_tally"
down_revision = "0004_chat_list_indexes"
branch_labels = None
depends_on = None

TALLY = Tally(
    "chat_conversation_counts",
    "chat_conversations",
    ("account_id", "status", "inbox_id", "agent_id"),
    nulls={"agent_id": 0},
)


def upgrade() -> None:
    op.create_table(
        TALLY.name,
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("inbox_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_chat_conversation_counts_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(*TALLY.by, name=op.f("pk_chat_conversation_counts")),
    )
    TALLY.install(op.get_bind())


def downgrade() -> None:
    TALLY.uninstall(op.get_bind())
    op.drop_table(TALLY.name)
