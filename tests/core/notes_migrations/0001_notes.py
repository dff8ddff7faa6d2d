"""The notes table of the test plugin.

Revision ID: 0001_notes
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_notes"
down_revision = None
branch_labels = ("notes",)
depends_on = "0001_core"


def upgrade() -> None:
    op.create_table(
        "notes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("text", sa.String(length=500), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_notes_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notes")),
    )
    op.create_index(op.f("ix_notes_account_id"), "notes", ["account_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_notes_account_id"), table_name="notes")
    op.drop_table("notes")
