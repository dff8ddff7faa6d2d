"""Migrations and models agree, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from notes_plugin import Note, NotesPlugin
from sqlalchemy import Connection, MetaData, inspect, text

from tollway import Gateway
from tollway.db.migrate import MigrationError, alembic_config
from tollway.testing import GatewayFactory


def _differences(
    connection: Connection, metadata: MetaData, unmodelled: tuple[str, ...]
) -> list[Any]:
    """What the migrated database has that the models lack or the other way round; the
    tables and indexes a plugin's migrations make outside its models (``metadata.info
    ["unmodelled"]``: an FTS5 table with its shadow tables, an expression index) aside."""
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    aside = ("alembic_version", *unmodelled)
    return [
        diff
        for diff in compare_metadata(context, metadata)
        if diff[0] not in ("remove_table", "remove_index")
        or not any(diff[1].name == name or diff[1].name.startswith(f"{name}_") for name in aside)
    ]


async def test_migrated_schema_matches_every_plugins_models(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory(extra_plugins=[("notes", NotesPlugin())], isolated=True)
    combined = MetaData()
    unmodelled: list[str] = []
    for models in gateway.registry.models:
        for table in models.metadata.tables.values():
            table.to_metadata(combined)
        unmodelled += models.metadata.info.get("unmodelled", ())
    async with gateway.database.engine.connect() as connection:
        differences = await connection.run_sync(_differences, combined, tuple(unmodelled))
        tables = await connection.run_sync(lambda sync: set(inspect(sync).get_table_names()))
    assert differences == []
    assert {"accounts", "api_keys", "billing_subscriptions", "notes", "alembic_version"} <= tables


async def test_each_plugin_has_its_own_migration_branch(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(extra_plugins=[("notes", NotesPlugin())], isolated=True)
    async with gateway.database.engine.connect() as connection:
        heads = await connection.run_sync(
            lambda sync: set(MigrationContext.configure(sync).get_current_heads())
        )
    script = ScriptDirectory.from_config(alembic_config(gateway.registry.models))
    core_head = script.get_revision("tollway@head").revision
    labels = {label for rev in script.walk_revisions() for label in rev.branch_labels}
    # The notes branch depends on the core's first revision; every branch (the core's,
    # the notes plugin's, each installed product's) has one head, and all are applied.
    assert {"tollway", "notes"} <= labels
    assert {core_head, "0001_notes"} <= heads
    assert heads == set(script.get_heads())
    assert len(heads) == len(labels)
    account = await gateway.accounts.create_account("acme")
    async with gateway.database.transaction() as session:
        session.add(Note(account_id=account, text="owned by a plugin"))


async def test_upgrade_is_idempotent(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory()
    await gateway.migrate()
    await gateway.migrate()
    account = await gateway.accounts.create_account("after re-running migrations")
    assert account >= 1


async def test_a_missing_plugins_migrations_fail_with_a_clear_message(
    gateway_factory: GatewayFactory,
) -> None:
    with_notes = await gateway_factory(extra_plugins=[("notes", NotesPlugin())], isolated=True)
    without_notes = Gateway(with_notes.settings)
    try:
        with pytest.raises(MigrationError, match=r"0001_notes.*plugin that is not installed"):
            await without_notes.migrate()
    finally:
        await without_notes.database.dispose()


def _downgrade(connection: Connection, config: Any, revision: str) -> None:
    config.attributes["connection"] = connection
    command.downgrade(config, revision)


async def test_subscriptions_move_to_the_platform_ledger_and_back(
    gateway_factory: GatewayFactory,
) -> None:
    """0007: an account's subscriptions, active or cancelled, become the billing
    engine's (free, monthly from the upgrade); downgrading gives them back."""
    gateway = await gateway_factory(isolated=True)
    config = alembic_config(gateway.registry.models)
    async with gateway.database.engine.begin() as connection:
        await connection.run_sync(_downgrade, config, "0006_payment_cards")
        await connection.execute(
            text(
                "INSERT INTO accounts (id, name, created_at) VALUES "
                "(1, 'acme', '2026-01-01 00:00:00')"
            )
        )
        await connection.execute(
            text(
                "INSERT INTO subscriptions (account_id, product, plan, status, created_at) VALUES "
                "(1, 'chat', 'pro', 'active', '2026-01-02 00:00:00'), "
                "(1, 'code', 'free', 'cancelled', '2026-01-03 00:00:00')"
            )
        )
        await connection.execute(
            text(
                "INSERT INTO api_keys (account_id, name, prefix, key_hash, scopes, is_admin, "
                "created_at) VALUES (1, 'kept', 'tw_kept', 'hash', '[]', false, "
                "'2026-01-01 00:00:00')"
            )
        )
    await gateway.migrate()
    listed = await gateway.accounts.account(1)
    assert [(s.product, s.plan, s.status, s.admitted) for s in listed.subscriptions] == [
        ("chat", "pro", "active", True),
        ("code", "free", "canceled", False),
    ]
    assert (listed.email, listed.full_name, listed.company) == (None, "", "")
    [key] = await gateway.accounts.list_keys(1)  # nothing referencing accounts was lost
    assert key.name == "kept"
    async with gateway.database.engine.begin() as connection:
        await connection.run_sync(_downgrade, config, "0006_payment_cards")
        rows = await connection.execute(
            text("SELECT product, plan, status FROM subscriptions ORDER BY product")
        )
        restored = [tuple(row) for row in rows]
    assert restored == [("chat", "pro", "active"), ("code", "free", "cancelled")]
