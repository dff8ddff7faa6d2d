"""The point of sale tables, and full-text search over products' names and descriptions.

Search is the database's own: on PostgreSQL a GIN index over the ``simple``
configuration's ``tsvector`` of name and description, split into words at every
non-word character as SQLite's tokenizer splits them (PostgreSQL's parser would keep
``Tea/Coffee`` or ``B.L.T.`` whole), without stemming (product names are in any
language); on SQLite an external-content FTS5 table kept in step by triggers.

Revision ID: 0001_pos
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tollway import UTCDateTime

revision = "0001_pos"
down_revision = None
branch_labels = ("pos",)
depends_on = "0001_core"

ID = 24
SEARCH_DOCUMENT = (
    "to_tsvector('simple', regexp_replace(name || ' ' || description, '\\W+', ' ', 'g'))"
)
"""PostgreSQL's document of a product; the search query repeats it to use the index."""

_FTS5 = [
    "CREATE VIRTUAL TABLE pos_products_fts USING fts5("
    "name, description, content='pos_products', content_rowid='rowid', "
    "tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER pos_products_fts_insert AFTER INSERT ON pos_products BEGIN "
    "INSERT INTO pos_products_fts(rowid, name, description) "
    "VALUES (new.rowid, new.name, new.description); END",
    "CREATE TRIGGER pos_products_fts_delete AFTER DELETE ON pos_products BEGIN "
    "INSERT INTO pos_products_fts(pos_products_fts, rowid, name, description) "
    "VALUES ('delete', old.rowid, old.name, old.description); END",
    "CREATE TRIGGER pos_products_fts_update AFTER UPDATE OF name, description ON pos_products "
    "BEGIN INSERT INTO pos_products_fts(pos_products_fts, rowid, name, description) "
    "VALUES ('delete', old.rowid, old.name, old.description); "
    "INSERT INTO pos_products_fts(rowid, name, description) "
    "VALUES (new.rowid, new.name, new.description); END",
]


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


def _id(table: str) -> list[sa.Column[str] | sa.Constraint]:
    return [
        sa.Column("id", sa.String(length=ID), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
    ]


def upgrade() -> None:
    op.create_table(
        "pos_stores",
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("last_order_number", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_pos_stores_account_id_accounts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("account_id", name=op.f("pk_pos_stores")),
    )
    op.create_table(
        "pos_categories",
        *_id("pos_categories"),
        *_account("pos_categories"),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("icon", sa.String(length=100), nullable=True),
        sa.Column("color", sa.String(length=7), nullable=True),
        sa.Column("sort_order", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index(
        "ix_pos_categories_account_order", "pos_categories", ["account_id", "sort_order"]
    )
    op.create_table(
        "pos_products",
        *_id("pos_products"),
        *_account("pos_products"),
        sa.Column("category_id", sa.String(length=ID), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("price_cents", sa.Integer(), nullable=False),
        sa.Column("discount_bps", sa.Integer(), nullable=False),
        sa.Column("image_url", sa.Text(), nullable=True),
        sa.Column("stock_qty", sa.Integer(), nullable=True),
        sa.Column("low_stock_threshold", sa.Integer(), nullable=False),
        sa.Column("unit", sa.String(length=20), nullable=False),
        sa.Column("prep_minutes", sa.Integer(), nullable=False),
        sa.Column("modifiers", sa.JSON(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["category_id"],
            ["pos_categories.id"],
            name=op.f("fk_pos_products_category_id_pos_categories"),
            ondelete="SET NULL",
        ),
    )
    op.create_index(
        "ix_pos_products_account_category", "pos_products", ["account_id", "category_id"]
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            f"CREATE INDEX ix_pos_products_search ON pos_products USING gin ({SEARCH_DOCUMENT})"
        )
    else:
        for statement in _FTS5:
            op.execute(statement)
    op.create_table(
        "pos_stock_movements",
        sa.Column("id", sa.Integer(), nullable=False),
        *_account("pos_stock_movements"),
        sa.Column("product_id", sa.String(length=ID), nullable=False),
        sa.Column("delta", sa.Integer(), nullable=False),
        sa.Column("qty_after", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=200), nullable=False),
        sa.Column("order_id", sa.String(length=ID), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["product_id"],
            ["pos_products.id"],
            name=op.f("fk_pos_stock_movements_product_id_pos_products"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pos_stock_movements")),
    )
    op.create_index("ix_pos_stock_movements_product", "pos_stock_movements", ["product_id", "id"])
    op.create_table(
        "pos_customers",
        *_id("pos_customers"),
        *_account("pos_customers"),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("email_key", sa.String(length=320), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=False),
        sa.Column("full_name", sa.String(length=200), nullable=True),
        sa.Column("phone", sa.String(length=32), nullable=True),
        sa.Column("loyalty_points", sa.BigInteger(), nullable=False),
        sa.Column("addresses", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("account_id", "email_key", name=op.f("uq_pos_customers_account_id")),
    )
    op.create_table(
        "pos_coupons",
        *_id("pos_coupons"),
        *_account("pos_coupons"),
        sa.Column("code", sa.String(length=64), nullable=False),
        sa.Column("code_key", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("percent_bps", sa.Integer(), nullable=False),
        sa.Column("amount_cents", sa.Integer(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("single_use", sa.Boolean(), nullable=False),
        sa.Column("used_by_order_id", sa.String(length=ID), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("account_id", "code_key", name=op.f("uq_pos_coupons_account_id")),
    )
    op.create_table(
        "pos_orders",
        *_id("pos_orders"),
        *_account("pos_orders"),
        sa.Column("order_number", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("order_type", sa.String(length=16), nullable=False),
        sa.Column("customer_id", sa.String(length=ID), nullable=True),
        sa.Column("table_id", sa.String(length=64), nullable=True),
        sa.Column("delivery_address", sa.JSON(), nullable=True),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.Column("coupon_code", sa.String(length=64), nullable=True),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("subtotal_cents", sa.BigInteger(), nullable=False),
        sa.Column("discount_cents", sa.BigInteger(), nullable=False),
        sa.Column("loyalty_discount_cents", sa.BigInteger(), nullable=False),
        sa.Column("tax_cents", sa.BigInteger(), nullable=False),
        sa.Column("delivery_fee_cents", sa.BigInteger(), nullable=False),
        sa.Column("total_cents", sa.BigInteger(), nullable=False),
        sa.Column("points_earned", sa.BigInteger(), nullable=False),
        sa.Column("estimated_ready", UTCDateTime(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
        sa.Column("cancelled_at", UTCDateTime(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["pos_customers.id"],
            name=op.f("fk_pos_orders_customer_id_pos_customers"),
            ondelete="SET NULL",
        ),
        sa.UniqueConstraint("account_id", "order_number", name=op.f("uq_pos_orders_account_id")),
    )
    op.create_index("ix_pos_orders_account_created", "pos_orders", ["account_id", "created_at"])
    op.create_index("ix_pos_orders_customer_created", "pos_orders", ["customer_id", "created_at"])
    op.create_table(
        "pos_order_lines",
        sa.Column("order_id", sa.String(length=ID), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        *_account("pos_order_lines"),
        sa.Column("product_id", sa.String(length=ID), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("qty", sa.Integer(), nullable=False),
        sa.Column("modifiers", sa.JSON(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.Column("unit_price_cents", sa.BigInteger(), nullable=False),
        sa.Column("line_discount_cents", sa.BigInteger(), nullable=False),
        sa.Column("coupon_cents", sa.BigInteger(), nullable=False),
        sa.Column("loyalty_cents", sa.BigInteger(), nullable=False),
        sa.Column("total_cents", sa.BigInteger(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("cancelled", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["order_id"],
            ["pos_orders.id"],
            name=op.f("fk_pos_order_lines_order_id_pos_orders"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("order_id", "position", name=op.f("pk_pos_order_lines")),
    )
    op.create_index(
        "ix_pos_order_lines_account_created", "pos_order_lines", ["account_id", "created_at"]
    )


def downgrade() -> None:
    for table in (
        "pos_order_lines",
        "pos_orders",
        "pos_coupons",
        "pos_customers",
        "pos_stock_movements",
    ):
        op.drop_table(table)
    if op.get_bind().dialect.name != "postgresql":
        op.execute("DROP TABLE pos_products_fts")  # its triggers go with pos_products
    for table in ("pos_products", "pos_categories", "pos_stores"):
        op.drop_table(table)
