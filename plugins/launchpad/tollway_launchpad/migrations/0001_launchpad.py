"""The subscription billing tables: plans, customers and checkout sessions.

Revision ID: 0001_launchpad
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import UTCDateTime

revision = "0001_launchpad"
down_revision = None
branch_labels = ("launchpad",)
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
        "launchpad_plans",
        sa.Column("id", sa.Integer(), nullable=False),
        *_account("launchpad_plans"),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("slug", sa.String(length=100), nullable=False),
        sa.Column("price_monthly_cents", sa.Integer(), nullable=False),
        sa.Column("price_annual_cents", sa.Integer(), nullable=False),
        sa.Column("trial_days", sa.Integer(), nullable=False),
        sa.Column("features", sa.JSON(), nullable=False),
        sa.Column("quota", sa.JSON(), nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("sort_order", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_launchpad_plans")),
        sa.UniqueConstraint("account_id", "slug", name=op.f("uq_launchpad_plans_account_id")),
    )
    op.create_index(
        "ix_launchpad_plans_account_order", "launchpad_plans", ["account_id", "sort_order", "id"]
    )
    op.create_table(
        "launchpad_customers",
        sa.Column("id", sa.Integer(), nullable=False),
        *_account("launchpad_customers"),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("email_key", sa.String(length=320), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=False),
        sa.Column("full_name", sa.String(length=200), nullable=True),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_launchpad_customers")),
        sa.UniqueConstraint(
            "account_id", "email_key", name=op.f("uq_launchpad_customers_account_id")
        ),
    )
    op.create_table(
        "launchpad_checkout_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        *_account("launchpad_checkout_sessions"),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=False),
        sa.Column("billing_interval", sa.String(length=8), nullable=False),
        sa.Column("amount_cents", sa.Integer(), nullable=False),
        sa.Column("success_url", sa.Text(), nullable=False),
        sa.Column("cancel_url", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
        sa.Column("subscription_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["launchpad_customers.id"],
            name=op.f("fk_launchpad_checkout_sessions_customer_id_launchpad_customers"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["plan_id"],
            ["launchpad_plans.id"],
            name=op.f("fk_launchpad_checkout_sessions_plan_id_launchpad_plans"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_launchpad_checkout_sessions")),
    )
    op.create_index(
        op.f("ix_launchpad_checkout_sessions_customer_id"),
        "launchpad_checkout_sessions",
        ["customer_id"],
    )
    op.create_index(
        op.f("ix_launchpad_checkout_sessions_plan_id"), "launchpad_checkout_sessions", ["plan_id"]
    )


def downgrade() -> None:
    op.drop_table("launchpad_checkout_sessions")
    op.drop_table("launchpad_customers")
    op.drop_table("launchpad_plans")
