"""The short links tables: links and their clicks.

Revision ID: 0001_link
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import UTCDateTime

revision = "0001_link"
down_revision = None
branch_labels = ("link",)
depends_on = "0001_core"


def _account(table: str) -> list[sa.Column[int] | sa.Constraint]:
    return [
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f(f"fk_{table}_account_id_accounts"),
            ondelete="CASCADE",
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "link_links",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("public_id", sa.String(length=32), nullable=False),
        *_account("link_links"),
        sa.Column("code", sa.String(length=64), nullable=False),
        sa.Column("destination_url", sa.Text(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("expired_url", sa.Text(), nullable=True),
        sa.Column("max_clicks", sa.Integer(), nullable=True),
        sa.Column("clicks", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_link_links")),
        sa.UniqueConstraint("public_id", name=op.f("uq_link_links_public_id")),
        sa.UniqueConstraint("code", name=op.f("uq_link_links_code")),
    )
    op.create_index(op.f("ix_link_links_account_id"), "link_links", ["account_id"])
    op.create_table(
        "link_clicks",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("link_id", sa.Integer(), nullable=False),
        *_account("link_clicks"),
        sa.Column("clicked_at", UTCDateTime(), nullable=False),
        sa.Column("referrer", sa.String(length=255), nullable=False),
        sa.Column("country", sa.String(length=2), nullable=False),
        sa.Column("device", sa.String(length=8), nullable=False),
        sa.Column("visitor", sa.String(length=32), nullable=False),
        sa.Column("bot", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["link_id"],
            ["link_links.id"],
            name=op.f("fk_link_clicks_link_id_link_links"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_link_clicks")),
    )
    op.create_index(op.f("ix_link_clicks_account_id"), "link_clicks", ["account_id"])
    op.create_index("ix_link_clicks_link_time", "link_clicks", ["link_id", "clicked_at"])


def downgrade() -> None:
    op.drop_table("link_clicks")
    op.drop_table("link_links")
