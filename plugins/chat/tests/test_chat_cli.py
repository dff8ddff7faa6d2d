"""``tollway chat inboxes create``, run as operators run it, in real processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tollway import Gateway, load_settings
from tollway.testing import free_port
from tollway_chat.queries import ChatReads


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")
    }
    environment["TOLLWAY_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'chat.db'}"
    return environment


def tollway(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tollway.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_inboxes_create(env: dict[str, str]) -> None:
    account = tollway(env, "accounts", "create", "acme", "--subscribe", "chat=pro").stdout.strip()
    first = tollway(
        env,
        "chat",
        "inboxes",
        "create",
        "--account",
        account,
        "--name",
        "Website",
        "--channel",
        "live_chat",
    )
    assert first.returncode == 0, first.stderr
    assert re.fullmatch(r"\d+\n", first.stdout)
    second = tollway(
        env,
        "chat",
        "inboxes",
        "create",
        "--account",
        account,
        "--name",
        "Mail",
        "--channel",
        "email",
        "--disabled",
    )
    assert second.returncode == 0, second.stderr

    gateway = Gateway(load_settings(environ={}, database_url=env["TOLLWAY_DATABASE_URL"]))
    try:
        inboxes = await ChatReads(gateway.database.reads, int(account)).list_inboxes()
    finally:
        await gateway.database.dispose()
    assert [(i.id, i.name, i.channel_type, i.is_enabled) for i in inboxes] == [
        (int(first.stdout), "Website", "live_chat", True),
        (int(second.stdout), "Mail", "email", False),
    ]


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (("--account", "999", "--name", "Web", "--channel", "email"), 2, "tollway: account 999"),
        (("--account", "1", "--name", "Web", "--channel", "sms"), 2, "invalid choice"),
        (("--account", "1", "--name", "  ", "--channel", "email"), 2, "tollway: --name"),
        (("--name", "Web", "--channel", "email"), 2, "--account"),
    ],
)
def test_inboxes_create_refusals(
    env: dict[str, str], args: tuple[str, ...], status: int, message: str
) -> None:
    tollway(env, "accounts", "create", "acme")
    result = tollway(env, "chat", "inboxes", "create", *args)
    assert result.returncode == status
    assert result.stdout == ""
    assert message in result.stderr


def test_an_unreachable_database_is_one_line(env: dict[str, str]) -> None:
    env["TOLLWAY_DATABASE_URL"] = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/test"
    args = ("--account", "1", "--name", "Web", "--channel", "email")
    result = tollway(env, "chat", "inboxes", "create", *args)
    assert result.returncode == 1
    assert result.stderr.startswith("tollway: cannot use the database postgresql+asyncpg://")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
