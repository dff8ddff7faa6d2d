"""Alembic, driven from code: one migration branch per plugin, upgraded together.

The core's branch is labelled ``tollway``; each plugin's branch ``depends_on`` it.
``upgrade`` applies every registered branch's head (``alembic upgrade heads``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.util import CommandError
from sqlalchemy import Connection

from tollway.db.database import Database
from tollway.registry import Models

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(models: Sequence[Models]) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    locations = [str(MIGRATIONS / "versions")]
    locations += [str(item.migrations) for item in models if item.migrations is not None]
    config.set_main_option("path_separator", "os")
    config.set_main_option("version_locations", os.pathsep.join(dict.fromkeys(locations)))
    config.attributes["target_metadata"] = [item.metadata for item in models]
    return config


class MigrationError(RuntimeError):
    """The database cannot be brought up to date; the message says why and what to do."""


def _run(connection: Connection, config: Config, revision: str) -> None:
    config.attributes["connection"] = connection
    try:
        command.upgrade(config, revision)
    except CommandError as error:
        if "Can't locate revision" not in str(error):
            raise
        raise MigrationError(
            f"{error}: the database was migrated by a plugin that is not installed here. "
            "Install that plugin again (its tables are still in the database)."
        ) from error


async def upgrade(database: Database, models: Sequence[Models], revision: str = "heads") -> None:
    """Bring the database to ``revision`` of every registered migration branch."""
    config = alembic_config(models)
    async with database.engine.begin() as connection:
        await connection.run_sync(_run, config, revision)
