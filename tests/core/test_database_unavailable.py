"""Which database errors mean "unavailable, retry" (503) rather than a server bug."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from tollway.db import Database, unavailable
from tollway.testing import free_port


async def _error(url: str, statement: str = "SELECT 1") -> BaseException:
    database = Database(url)
    try:
        async with database.transaction() as session:
            await session.execute(text(statement))
    except Exception as error:
        return error
    finally:
        await database.dispose()
    raise AssertionError("the statement succeeded")


async def test_refused_connections_and_unopenable_files_are_unavailable(tmp_path: Path) -> None:
    refused = await _error(f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/test")
    assert unavailable(refused)
    unopenable = await _error(f"sqlite+aiosqlite:///{tmp_path}/missing/dir/x.db")
    assert unavailable(unopenable)


async def test_wrong_statements_are_not(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/x.db"
    assert not unavailable(await _error(url, "SELECT * FROM no_such_table"))
    assert not unavailable(await _error(url, "SELEC 1"))
    assert not unavailable(ValueError("unrelated"))


@pytest.mark.parametrize("error", [ConnectionResetError(), ConnectionRefusedError()])
def test_connection_errors_anywhere_in_the_chain(error: Exception) -> None:
    wrapper = RuntimeError("while loading the key")
    wrapper.__cause__ = error
    assert unavailable(wrapper)
