"""The click analytics' pre-aggregates: traffic per 15 minutes, referrers, countries
and devices per 15 minutes and per UTC day, and the visitor counts (see
``tollway_link.models``). They ship with the clicks table, so there are no clicks to
aggregate when they are created.

Revision ID: 0002_link_rollups
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_link_rollups"
down_revision = "0001_link"
branch_labels = None
depends_on = None


def _link(table: str) -> list[sa.Column[int] | sa.Constraint]:
    return [
        sa.Column("link_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["link_id"],
            ["link_links.id"],
            name=op.f(f"fk_{table}_link_id_link_links"),
            ondelete="CASCADE",
        ),
    ]


def _key(table: str, *columns: str) -> sa.PrimaryKeyConstraint:
    return sa.PrimaryKeyConstraint("link_id", *columns, name=op.f(f"pk_{table}"))


def upgrade() -> None:
    op.create_table(
        "link_traffic",
        *_link("link_traffic"),
        sa.Column("bucket", sa.Integer(), nullable=False),
        sa.Column("bot", sa.Boolean(), nullable=False),
        sa.Column("clicks", sa.Integer(), nullable=False),
        _key("link_traffic", "bucket", "bot"),
    )
    op.create_table(
        "link_breakdown",
        *_link("link_breakdown"),
        sa.Column("buckets", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.Integer(), nullable=False),
        sa.Column("dimension", sa.String(length=8), nullable=False),
        sa.Column("value", sa.String(length=255), nullable=False),
        sa.Column("bot", sa.Boolean(), nullable=False),
        sa.Column("clicks", sa.Integer(), nullable=False),
        _key("link_breakdown", "buckets", "bucket", "dimension", "value", "bot"),
    )
    op.create_table(
        "link_visits",
        *_link("link_visits"),
        sa.Column("visitor", sa.String(length=32), nullable=False),
        sa.Column("bucket", sa.Integer(), nullable=False),
        sa.Column("bot", sa.Boolean(), nullable=False),
        _key("link_visits", "visitor", "bucket"),
    )
    op.create_table(
        "link_day_visitors",
        *_link("link_day_visitors"),
        sa.Column("include_bots", sa.Boolean(), nullable=False),
        sa.Column("buckets", sa.Integer(), nullable=False),
        sa.Column("shift", sa.Integer(), nullable=False),
        sa.Column("day", sa.Integer(), nullable=False),
        sa.Column("visitors", sa.Integer(), nullable=False),
        _key("link_day_visitors", "include_bots", "buckets", "shift", "day"),
    )
    op.create_table(
        "link_visitor_bounds",
        *_link("link_visitor_bounds"),
        sa.Column("include_bots", sa.Boolean(), nullable=False),
        sa.Column("bound", sa.String(length=5), nullable=False),
        sa.Column("bucket", sa.Integer(), nullable=False),
        sa.Column("visitors", sa.Integer(), nullable=False),
        _key("link_visitor_bounds", "include_bots", "bound", "bucket"),
    )


def downgrade() -> None:
    for table in (
        "link_visitor_bounds",
        "link_day_visitors",
        "link_visits",
        "link_breakdown",
        "link_traffic",
    ):
        op.drop_table(table)
