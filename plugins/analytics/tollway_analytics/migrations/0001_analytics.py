"""The analytics exports table.

Revision ID: 0001_analytics
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import UTCDateTime

revision = "0001_analytics"
down_revision = None
branch_labels = ("analytics",)
depends_on = "0001_core"


def upgrade() -> None:
    op.create_table(
        "analytics_exports",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("report_id", sa.String(length=100), nullable=False),
        sa.Column("format", sa.String(length=8), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("start_date", sa.String(length=10), nullable=False),
        sa.Column("end_date", sa.String(length=10), nullable=False),
        sa.Column("granularity", sa.String(length=8), nullable=False),
        sa.Column("tz", sa.String(length=64), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=True),
        sa.Column("file_size_bytes", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_analytics_exports_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_analytics_exports")),
    )
    op.create_index(
        "ix_analytics_exports_account_created",
        "analytics_exports",
        ["account_id", "created_at"],
    )
    op.create_index("ix_analytics_exports_expires", "analytics_exports", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_analytics_exports_expires", table_name="analytics_exports")
    op.drop_index("ix_analytics_exports_account_created", table_name="analytics_exports")
    op.drop_table("analytics_exports")
