"""The billing engine: payment methods, subscriptions, invoices, invoice numbers.

Revision ID: 0005_billing
Revises: 0004_idempotency
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway.db.base import UTCDateTime

revision = "0005_billing"
down_revision = "0004_idempotency"
branch_labels = None
depends_on = None

LIVE = sa.text("status != 'canceled'")
DEFAULT = sa.text("is_default")


def _owner(table: str) -> list[sa.Column[object] | sa.Constraint]:
    return [
        sa.Column("ledger", sa.String(length=32), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("customer", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f(f"fk_{table}_account_id_accounts"),
            ondelete="CASCADE",
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "billing_payment_methods",
        sa.Column("id", sa.Integer(), nullable=False),
        *_owner("billing_payment_methods"),
        sa.Column("token", sa.String(length=200), nullable=False),
        sa.Column("brand", sa.String(length=16), nullable=False),
        sa.Column("last4", sa.String(length=4), nullable=False),
        sa.Column("exp_month", sa.Integer(), nullable=False),
        sa.Column("exp_year", sa.Integer(), nullable=False),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_billing_payment_methods")),
    )
    op.create_index(
        "ix_billing_payment_methods_owner",
        "billing_payment_methods",
        ["ledger", "account_id", "customer"],
    )
    op.create_index(
        "uq_billing_payment_methods_default",
        "billing_payment_methods",
        ["ledger", "account_id", "customer"],
        unique=True,
        sqlite_where=DEFAULT,
        postgresql_where=DEFAULT,
    )
    op.create_table(
        "billing_subscriptions",
        sa.Column("id", sa.Integer(), nullable=False),
        *_owner("billing_subscriptions"),
        sa.Column("line", sa.String(length=64), nullable=False),
        sa.Column("plan", sa.String(length=64), nullable=False),
        sa.Column("plan_name", sa.String(length=200), nullable=False),
        sa.Column("interval", sa.String(length=8), nullable=False),
        sa.Column("amount_cents", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("payment_method_id", sa.Integer(), nullable=True),
        sa.Column("anchor_at", UTCDateTime(), nullable=False),
        sa.Column("cycle", sa.Integer(), nullable=False),
        sa.Column("trial_end_at", UTCDateTime(), nullable=True),
        sa.Column("current_period_start", UTCDateTime(), nullable=False),
        sa.Column("current_period_end", UTCDateTime(), nullable=False),
        sa.Column("cancel_at_period_end", sa.Boolean(), nullable=False),
        sa.Column("canceled_at", UTCDateTime(), nullable=True),
        sa.Column("pending", sa.JSON(), nullable=True),
        sa.Column("next_action_at", UTCDateTime(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["payment_method_id"],
            ["billing_payment_methods.id"],
            name=op.f("fk_billing_subscriptions_payment_method_id_billing_payment_methods"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_billing_subscriptions")),
    )
    op.create_index(
        "uq_billing_subscriptions_live",
        "billing_subscriptions",
        ["ledger", "account_id", "customer", "line"],
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )
    op.create_index(
        "ix_billing_subscriptions_next_action_at", "billing_subscriptions", ["next_action_at"]
    )
    op.create_table(
        "billing_invoices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uid", sa.String(length=32), nullable=False),
        *_owner("billing_invoices"),
        sa.Column("subscription_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("number", sa.Integer(), nullable=True),
        sa.Column("amount_cents", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("description", sa.String(length=500), nullable=False),
        sa.Column("lines", sa.JSON(), nullable=False),
        sa.Column("period_start", UTCDateTime(), nullable=False),
        sa.Column("period_end", UTCDateTime(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=True),
        sa.Column("charge_id", sa.String(length=64), nullable=True),
        sa.Column("failure_code", sa.String(length=64), nullable=True),
        sa.Column("failure_message", sa.String(length=200), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("finalized_at", UTCDateTime(), nullable=True),
        sa.Column("paid_at", UTCDateTime(), nullable=True),
        sa.Column("failed_at", UTCDateTime(), nullable=True),
        sa.Column("voided_at", UTCDateTime(), nullable=True),
        sa.Column("uncollectible_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["subscription_id"],
            ["billing_subscriptions.id"],
            name=op.f("fk_billing_invoices_subscription_id_billing_subscriptions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_billing_invoices")),
        sa.UniqueConstraint("uid", name=op.f("uq_billing_invoices_uid")),
        sa.UniqueConstraint(
            "subscription_id",
            "kind",
            "period_start",
            name=op.f("uq_billing_invoices_subscription_id"),
        ),
    )
    op.create_index(
        "ix_billing_invoices_owner", "billing_invoices", ["ledger", "account_id", "customer", "id"]
    )
    op.create_index(
        op.f("ix_billing_invoices_subscription_id"), "billing_invoices", ["subscription_id"]
    )
    op.create_table(
        "billing_invoice_sequences",
        sa.Column("ledger", sa.String(length=32), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("last", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("ledger", "account_id", name=op.f("pk_billing_invoice_sequences")),
    )


def downgrade() -> None:
    op.drop_table("billing_invoice_sequences")
    op.drop_table("billing_invoices")
    op.drop_table("billing_subscriptions")
    op.drop_table("billing_payment_methods")
