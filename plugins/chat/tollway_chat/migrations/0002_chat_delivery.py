"""Delivery state of chat messages: status, attempts and the last error.

Revision ID: 0002_chat_delivery
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_chat_delivery"
down_revision = "0001_chat"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chat_messages") as batch:
        batch.add_column(sa.Column("delivery_status", sa.String(length=20), nullable=True))
        batch.add_column(
            sa.Column("delivery_attempts", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("delivery_error", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chat_messages") as batch:
        batch.drop_column("delivery_error")
        batch.drop_column("delivery_attempts")
        batch.drop_column("delivery_status")
