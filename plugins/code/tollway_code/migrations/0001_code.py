"""The code product's table: codes generated per account and 15 minutes.

Revision ID: 0001_code
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import UTCDateTime

revision = "0001_code"
down_revision = None
branch_labels = ("code",)
depends_on = "0001_core"


def upgrade() -> None:
    op.create_table(
        "code_generated",
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("bucket", UTCDateTime(), nullable=False),
        sa.Column("qr", sa.Integer(), nullable=False),
        sa.Column("barcodes", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_code_generated_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("account_id", "bucket", name=op.f("pk_code_generated")),
    )


def downgrade() -> None:
    op.drop_table("code_generated")
