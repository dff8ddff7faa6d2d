"""Deployment secrets: random values made once and shared by every gateway process.

Revision ID: 0003_deployment_secrets
Revises: 0002_webhooks
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway.db.base import UTCDateTime

revision = "0003_deployment_secrets"
down_revision = "0002_webhooks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deployment_secrets",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("value", sa.String(length=200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_deployment_secrets")),
    )


def downgrade() -> None:
    op.drop_table("deployment_secrets")
