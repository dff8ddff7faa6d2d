"""Daily visitors from visit gaps instead of a row per window.

``link_day_visitors`` kept the distinct visitors of every window of 23, 24 and 25 hours
starting on a 15-minute bucket: a new visitor added to 288 windows per count, and a
batch of clicks spread over many links rewrote up to 576 rows per link. With visitors
as varied as real traffic that was some 250 rows per click. ``link_visit_gaps`` keeps
each visit by its gap to the visitor's previous one (see ``tollway_link.models.
VisitGaps``): a new visit changes at most two rows. The gaps are computed here from
``link_visits``, which holds every visit; the downgrade computes the windows back
from them.

Revision ID: 0003_link_visit_gaps
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_link_visit_gaps"
down_revision = "0002_link_rollups"
branch_labels = None
depends_on = None

LONGEST_DAY = 104
"""``tollway_link.store.LONGEST_DAY`` when this revision was written."""
WINDOWS = (92, 96, 100)
"""The window lengths ``link_day_visitors`` kept."""


def upgrade() -> None:
    op.create_table(
        "link_visit_gaps",
        sa.Column("link_id", sa.Integer(), nullable=False),
        sa.Column("include_bots", sa.Boolean(), nullable=False),
        sa.Column("bucket", sa.Integer(), nullable=False),
        sa.Column("gap", sa.Integer(), nullable=False),
        sa.Column("visitors", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["link_id"],
            ["link_links.id"],
            name=op.f("fk_link_visit_gaps_link_id_link_links"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "link_id", "include_bots", "bucket", "gap", name=op.f("pk_link_visit_gaps")
        ),
    )
    for include_bots, visits in ((True, "true"), (False, "NOT bot")):
        # Each visit's gap to the visitor's previous one in the same count, capped.
        op.execute(
            sa.text(
                "INSERT INTO link_visit_gaps (link_id, include_bots, bucket, gap, visitors)"
                " SELECT link_id, :include_bots, bucket, gap, count(*) FROM ("
                "  SELECT link_id, bucket, CASE"
                "   WHEN previous IS NULL OR bucket - previous > :longest THEN :longest"
                "   ELSE bucket - previous END AS gap"
                "  FROM (SELECT link_id, bucket, lag(bucket) OVER ("
                "    PARTITION BY link_id, visitor ORDER BY bucket) AS previous"
                f"   FROM link_visits WHERE {visits}) AS visits"
                " ) AS gaps GROUP BY link_id, bucket, gap"
            ).bindparams(include_bots=include_bots, longest=LONGEST_DAY)
        )
    op.drop_table("link_day_visitors")


def downgrade() -> None:
    op.create_table(
        "link_day_visitors",
        sa.Column("link_id", sa.Integer(), nullable=False),
        sa.Column("include_bots", sa.Boolean(), nullable=False),
        sa.Column("buckets", sa.Integer(), nullable=False),
        sa.Column("shift", sa.Integer(), nullable=False),
        sa.Column("day", sa.Integer(), nullable=False),
        sa.Column("visitors", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["link_id"],
            ["link_links.id"],
            name=op.f("fk_link_day_visitors_link_id_link_links"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "link_id",
            "include_bots",
            "buckets",
            "shift",
            "day",
            name=op.f("pk_link_day_visitors"),
        ),
    )
    for include_bots, visits in ((True, "true"), (False, "NOT bot")):
        for length in WINDOWS:
            # Window (shift, day) starts at bucket 96 * day - shift and holds `length`
            # buckets: the distinct visitors of every window holding a visit.
            op.execute(
                sa.text(
                    "INSERT INTO link_day_visitors"
                    " (link_id, include_bots, buckets, shift, day, visitors)"
                    " SELECT link_id, :include_bots, :length, (96 - start % 96) % 96,"
                    "  (start + 95) / 96, count(DISTINCT visitor) FROM ("
                    "  WITH RECURSIVE steps(step) AS ("
                    "   SELECT 0 UNION ALL SELECT step + 1 FROM steps WHERE step + 1 < :length)"
                    "  SELECT link_id, visitor, bucket - step AS start"
                    f"  FROM link_visits, steps WHERE {visits}"
                    " ) AS windows GROUP BY link_id, start"
                ).bindparams(include_bots=include_bots, length=length)
            )
    op.drop_table("link_visit_gaps")
