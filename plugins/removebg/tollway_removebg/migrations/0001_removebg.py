"""The background removal tables: secrets, credits, batch jobs and items, results.

Revision ID: 0001_removebg
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import UTCDateTime

revision = "0001_removebg"
down_revision = None
branch_labels = ("removebg",)
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


def _job(table: str, *, nullable: bool) -> list[sa.Column[str] | sa.Constraint]:
    return [
        sa.Column("job_id", sa.String(length=40), nullable=nullable),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["removebg_jobs.id"],
            name=op.f(f"fk_{table}_job_id_removebg_jobs"),
            ondelete="CASCADE",
        ),
    ]


def upgrade() -> None:
    op.create_table(
        "removebg_credits",
        sa.Column("id", sa.Integer(), nullable=False),
        *_account("removebg_credits"),
        sa.Column("period", sa.String(length=7), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        sa.Column("reserved", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_removebg_credits")),
        sa.UniqueConstraint("account_id", "period", name="uq_removebg_credits_period"),
    )
    op.create_table(
        "removebg_jobs",
        sa.Column("id", sa.String(length=40), nullable=False),
        *_account("removebg_jobs"),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("completed", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("credits_reserved", sa.Integer(), nullable=False),
        sa.Column("credits_used", sa.Integer(), nullable=False),
        sa.Column("period", sa.String(length=7), nullable=False),
        sa.Column("output_format", sa.String(length=10), nullable=False),
        sa.Column("output_size", sa.String(length=10), nullable=False),
        sa.Column("bg_color", sa.String(length=7), nullable=True),
        sa.Column("base_url", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_removebg_jobs")),
    )
    op.create_table(
        "removebg_job_items",
        sa.Column("id", sa.Integer(), nullable=False),
        *_job("removebg_job_items", nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("reference", sa.String(length=200), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("result_id", sa.String(length=40), nullable=True),
        sa.Column("width", sa.Integer(), nullable=True),
        sa.Column("height", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_removebg_job_items")),
        sa.UniqueConstraint("job_id", "position", name="uq_removebg_job_items_position"),
    )
    op.create_table(
        "removebg_results",
        sa.Column("id", sa.String(length=40), nullable=False),
        *_account("removebg_results"),
        *_job("removebg_results", nullable=True),
        sa.Column("media_type", sa.String(length=20), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("width", sa.Integer(), nullable=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_removebg_results")),
    )
    for table, column in _INDEXES:
        op.create_index(op.f(f"ix_{table}_{column}"), table, [column])


_INDEXES = [
    ("removebg_credits", "account_id"),
    ("removebg_jobs", "account_id"),
    ("removebg_job_items", "job_id"),
    ("removebg_results", "account_id"),
    ("removebg_results", "job_id"),
    ("removebg_results", "expires_at"),
]


def downgrade() -> None:
    for table, column in reversed(_INDEXES):
        op.drop_index(op.f(f"ix_{table}_{column}"), table_name=table)
    for table in (
        "removebg_results",
        "removebg_job_items",
        "removebg_jobs",
        "removebg_credits",
    ):
        op.drop_table(table)
