"""Alembic environment: runs on the connection handed over by ``tollway.db.migrate``."""

from __future__ import annotations

from alembic import context

config = context.config
connection = config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=config.attributes["target_metadata"],
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
