"""The local card processor's saved cards and charges (never a card number or CVC).

Revision ID: 0006_payment_cards
Revises: 0005_billing
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway.db.base import UTCDateTime

revision = "0006_payment_cards"
down_revision = "0005_billing"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "processor_cards",
        sa.Column("token", sa.String(length=40), nullable=False),
        sa.Column("brand", sa.String(length=16), nullable=False),
        sa.Column("last4", sa.String(length=4), nullable=False),
        sa.Column("exp_month", sa.Integer(), nullable=False),
        sa.Column("exp_year", sa.Integer(), nullable=False),
        sa.Column("behaviour", sa.String(length=32), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("forgotten_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("token", name=op.f("pk_processor_cards")),
    )
    op.create_table(
        "processor_charges",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=False),
        sa.Column("card_token", sa.String(length=40), nullable=False),
        sa.Column("amount_cents", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("failure_code", sa.String(length=32), nullable=True),
        sa.Column("failure_message", sa.String(length=200), nullable=True),
        sa.Column("refunded_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["card_token"],
            ["processor_cards.token"],
            name=op.f("fk_processor_charges_card_token_processor_cards"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_processor_charges")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_processor_charges_idempotency_key")),
    )


def downgrade() -> None:
    op.drop_table("processor_charges")
    op.drop_table("processor_cards")
