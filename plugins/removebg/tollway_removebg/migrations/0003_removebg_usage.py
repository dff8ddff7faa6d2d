"""Credits charged and images processed per account and 15 minutes, for the usage
report. Charges made before it are in the billing periods' totals only.

Revision ID: 0003_removebg_usage
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import UTCDateTime

revision = "0003_removebg_usage"
down_revision = "0002_removebg_batch_lease"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "removebg_usage",
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("bucket", UTCDateTime(), nullable=False),
        sa.Column("credits", sa.Integer(), nullable=False),
        sa.Column("images", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_removebg_usage_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("account_id", "bucket", name=op.f("pk_removebg_usage")),
    )


def downgrade() -> None:
    op.drop_table("removebg_usage")
