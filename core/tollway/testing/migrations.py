"""One migration revision at a time, for tests of what a revision does to rows that
are already there (a backfill, a downgrade)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Literal

from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine


def revision(package: ModuleType, filename: str) -> ModuleType:
    """The revision ``filename`` of ``package``'s ``migrations`` folder, loaded from its
    file: revision files are not importable by name (theirs start with a digit)."""
    path = Path(str(package.__file__)).parent / "migrations" / filename
    spec = importlib.util.spec_from_file_location(f"{package.__name__}_{path.stem}", path)
    assert spec is not None, path
    assert spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def run_revision(
    engine: AsyncEngine, module: ModuleType, step: Literal["upgrade", "downgrade"]
) -> None:
    """``module``'s ``upgrade`` or ``downgrade`` alone, in a transaction of its own
    (Alembic's version table is left as it is)."""

    def run(connection: Connection) -> None:
        with Operations.context(MigrationContext.configure(connection)):
            getattr(module, step)()

    async with engine.begin() as connection:
        await connection.run_sync(run)
