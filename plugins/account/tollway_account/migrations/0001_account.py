"""The account product's table: the "Save a card" page's sessions.

Revision ID: 0001_account
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import UTCDateTime

revision = "0001_account"
down_revision = None
branch_labels = ("account",)
depends_on = "0001_core"


def upgrade() -> None:
    op.create_table(
        "account_card_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("return_url", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
        sa.Column("payment_method_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_account_card_sessions_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_account_card_sessions")),
    )
    op.create_index(
        op.f("ix_account_card_sessions_account_id"), "account_card_sessions", ["account_id"]
    )


def downgrade() -> None:
    op.drop_table("account_card_sessions")
