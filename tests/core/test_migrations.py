"""Migrations and models agree, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, MetaData, inspect

from tollway.testing import GatewayFactory


def _differences(connection: Connection, metadata: MetaData) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return [
        diff
        for diff in compare_metadata(context, metadata)
        if diff[0] != "remove_table" or diff[1].name != "alembic_version"
    ]


async def test_migrated_schema_matches_every_plugins_models(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory()
    combined = MetaData()
    for models in gateway.registry.models:
        for table in models.metadata.tables.values():
            table.to_metadata(combined)
    async with gateway.database.engine.connect() as connection:
        differences = await connection.run_sync(_differences, combined)
        tables = await connection.run_sync(lambda sync: set(inspect(sync).get_table_names()))
    assert differences == []
    assert {"accounts", "api_keys", "subscriptions", "alembic_version"} <= tables


async def test_upgrade_is_idempotent(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory()
    await gateway.migrate()
    await gateway.migrate()
    account = await gateway.accounts.create_account("after re-running migrations")
    assert account >= 1
