"""Batch jobs are leased by the process running them, so a batch whose process died,
or which was never queued, is taken up again (batches still processing are due).

Revision ID: 0002_removebg_batch_lease
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import UTCDateTime

revision = "0002_removebg_batch_lease"
down_revision = "0001_removebg"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("removebg_jobs") as batch:
        batch.add_column(sa.Column("lease_until", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("lease_token", sa.String(length=32), nullable=True))
        batch.create_index("ix_removebg_jobs_status_created", ["status", "created_at"])


def downgrade() -> None:
    with op.batch_alter_table("removebg_jobs") as batch:
        batch.drop_index("ix_removebg_jobs_status_created")
        batch.drop_column("lease_token")
        batch.drop_column("lease_until")
