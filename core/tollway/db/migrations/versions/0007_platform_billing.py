"""Accounts get a profile, and their product subscriptions move onto the billing
engine's ``platform`` ledger (the pipeline admits by it), so what an account may use
is what it pays for.

Each subscription becomes a free monthly one from the moment of the upgrade (until an
operator prices its plan); a cancelled one a canceled one.

Revision ID: 0007_platform_billing
Revises: 0006_payment_cards
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

from tollway.billing.periods import period_end
from tollway.db.base import UTCDateTime

revision = "0007_platform_billing"
down_revision = "0006_payment_cards"
branch_labels = None
depends_on = None

EPOCH = sa.text("'1970-01-01 00:00:00'")
"""A placeholder for rows that exist: each is given its ``created_at`` at once."""

OLD = sa.table(
    "subscriptions",
    sa.column("id", sa.Integer()),
    sa.column("account_id", sa.Integer()),
    sa.column("product", sa.String()),
    sa.column("plan", sa.String()),
    sa.column("status", sa.String()),
    sa.column("created_at", UTCDateTime()),
)
_TYPES: dict[str, Any] = {
    "ledger": sa.String(),
    "account_id": sa.Integer(),
    "customer": sa.String(),
    "line": sa.String(),
    "plan": sa.String(),
    "plan_name": sa.String(),
    "interval": sa.String(),
    "amount_cents": sa.Integer(),
    "currency": sa.String(),
    "status": sa.String(),
    "anchor_at": UTCDateTime(),
    "cycle": sa.Integer(),
    "current_period_start": UTCDateTime(),
    "current_period_end": UTCDateTime(),
    "cancel_at_period_end": sa.Boolean(),
    "canceled_at": UTCDateTime(),
    "next_action_at": UTCDateTime(),
    "version": sa.Integer(),
    "created_at": UTCDateTime(),
    "updated_at": UTCDateTime(),
}
NEW = sa.table("billing_subscriptions", *(sa.column(name, type_) for name, type_ in _TYPES.items()))


def upgrade() -> None:
    # Columns added in place: SQLite's batch mode would copy the table and drop the
    # old one, and that drop cascades to every table referencing accounts.
    op.add_column("accounts", sa.Column("email", sa.String(length=254), nullable=True))
    for name in ("full_name", "company"):
        op.add_column(
            "accounts",
            sa.Column(name, sa.String(length=200), nullable=False, server_default=""),
        )
    op.add_column("accounts", sa.Column("tax_id", sa.String(length=32), nullable=True))
    op.add_column(
        "accounts",
        sa.Column("updated_at", UTCDateTime(), nullable=False, server_default=EPOCH),
    )
    op.execute("UPDATE accounts SET updated_at = created_at")
    if op.get_bind().dialect.name != "sqlite":  # SQLite cannot drop a default in place
        op.alter_column("accounts", "updated_at", server_default=None)
    op.create_index("uq_accounts_email", "accounts", ["email"], unique=True)
    _move_subscriptions()
    op.drop_table("subscriptions")


def _move_subscriptions() -> None:
    connection = op.get_bind()
    now = datetime.now(UTC).replace(microsecond=0)
    rows = connection.execute(sa.select(OLD).order_by(OLD.c.id)).all()
    moved = [
        {
            "ledger": "platform",
            "account_id": row.account_id,
            "customer": "",
            "line": row.product,
            "plan": row.plan,
            "plan_name": f"{row.product} {row.plan}",
            "interval": "month",
            "amount_cents": 0,
            "currency": "usd",
            "status": "active" if row.status == "active" else "canceled",
            "anchor_at": now,
            "cycle": 0,
            "current_period_start": now,
            "current_period_end": period_end(now, "month", 0),
            "cancel_at_period_end": False,
            "canceled_at": None if row.status == "active" else now,
            "next_action_at": period_end(now, "month", 0) if row.status == "active" else None,
            "version": 1,
            "created_at": row.created_at,
            "updated_at": now,
        }
        for row in rows
    ]
    if moved:
        connection.execute(sa.insert(NEW), moved)


def downgrade() -> None:
    op.create_table(
        "subscriptions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("product", sa.String(length=64), nullable=False),
        sa.Column("plan", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_subscriptions_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscriptions")),
        sa.UniqueConstraint("account_id", "product", name=op.f("uq_subscriptions_account_id")),
    )
    op.execute(
        "INSERT INTO subscriptions (account_id, product, plan, status, created_at) "
        "SELECT account_id, line, plan, CASE WHEN status = 'canceled' THEN 'cancelled' "
        "ELSE 'active' END, created_at FROM billing_subscriptions b WHERE ledger = 'platform' "
        "AND id = (SELECT max(id) FROM billing_subscriptions n WHERE n.ledger = 'platform' "
        "AND n.account_id = b.account_id AND n.line = b.line)"
    )
    op.execute("DELETE FROM billing_invoices WHERE ledger = 'platform'")
    op.execute("DELETE FROM billing_subscriptions WHERE ledger = 'platform'")
    op.drop_index("uq_accounts_email", table_name="accounts")
    for column in ("updated_at", "tax_id", "company", "full_name", "email"):
        op.drop_column("accounts", column)  # in place, for the reason upgrade() says
