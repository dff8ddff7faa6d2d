"""Durable delivery of chat messages: when the next attempt is due and its lease.

Messages left pending by the in-memory retries of 0002 become due at once.

Revision ID: 0003_chat_delivery_lease
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import UTCDateTime, utcnow

revision = "0003_chat_delivery_lease"
down_revision = "0002_chat_delivery"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chat_messages") as batch:
        batch.add_column(sa.Column("delivery_due_at", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("delivery_lease_until", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("delivery_lease_token", sa.String(length=32), nullable=True))
        batch.create_index("ix_chat_messages_delivery_due", ["delivery_status", "delivery_due_at"])
    messages = sa.table(
        "chat_messages",
        sa.column("delivery_status", sa.String()),
        sa.column("delivery_due_at", UTCDateTime()),
    )
    op.execute(
        messages.update()
        .where(messages.c.delivery_status == "pending")
        .values(delivery_due_at=utcnow())
    )


def downgrade() -> None:
    with op.batch_alter_table("chat_messages") as batch:
        batch.drop_index("ix_chat_messages_delivery_due")
        batch.drop_column("delivery_lease_token")
        batch.drop_column("delivery_lease_until")
        batch.drop_column("delivery_due_at")
