"""Every operator error ends ``tollway`` with one ``tollway: ...`` line and a non-zero
status, never a traceback: the real command, in real processes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cli_runner import TOLLWAY, assert_one_line_error, clean_env, tollway

from tollway import cli
from tollway.cli import manage
from tollway.testing import free_port


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(database_url=f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}")


def _closed_postgres() -> str:
    return f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/test"


@pytest.mark.parametrize(
    ("settings", "args", "says"),
    [
        ({}, ("--config", "/nonexistent.toml", "plugins"), "/nonexistent.toml"),
        ({"config": "/nonexistent.toml"}, ("plugins",), "/nonexistent.toml"),
        ({"database_url": "foo"}, ("plugins",), "database_url"),
        ({"database_url": "sqlite:///x.db"}, ("keys", "list", "--account", "1"), "synchronous"),
        ({"key_cache_ttl": "soon"}, ("accounts", "list"), "key_cache_ttl"),
        ({"plugins": "nosuchplugin"}, ("plugins",), "nosuchplugin"),
    ],
    ids=["missing-config", "missing-config-env", "bad-url", "sync-driver", "bad-value", "plugin"],
)
def test_bad_configuration_is_refused_with_one_line(
    env: dict[str, str], settings: dict[str, str], args: tuple[str, ...], says: str
) -> None:
    env.update({f"TOLLWAY_{name.upper()}": value for name, value in settings.items()})
    assert says in assert_one_line_error(tollway(env, *args, check=False), 2)


@pytest.mark.parametrize(
    ("text", "says"),
    [("[gateway\n", "not valid TOML"), ("[gateway]\nfoo = 1\n", "foo"), ("gateway = 1\n", "table")],
    ids=["not-toml", "unknown-key", "not-a-table"],
)
def test_a_bad_config_file_is_named(
    env: dict[str, str], tmp_path: Path, text: str, says: str
) -> None:
    config = tmp_path / "tollway.toml"
    config.write_text(text)
    line = assert_one_line_error(tollway(env, "--config", str(config), "plugins", check=False), 2)
    assert says in line


@pytest.mark.parametrize(
    "args",
    [("db", "upgrade"), ("accounts", "list"), ("keys", "revoke", "1")],
    ids=["db-upgrade", "accounts-list", "keys-revoke"],
)
def test_an_unreachable_database_is_one_line(env: dict[str, str], args: tuple[str, ...]) -> None:
    env["TOLLWAY_DATABASE_URL"] = url = _closed_postgres()
    line = assert_one_line_error(tollway(env, *args, check=False), 1)
    assert line.startswith(f"tollway: cannot use the database {url}: ")


def test_serve_against_an_unreachable_database_is_one_line(env: dict[str, str]) -> None:
    env["TOLLWAY_DATABASE_URL"] = _closed_postgres()
    result = tollway(env, "serve", "--port", str(free_port()), check=False)
    assert "cannot use the database" in assert_one_line_error(result, 1)


def test_a_worker_without_redis_is_one_line(env: dict[str, str]) -> None:
    env["TOLLWAY_REDIS_URL"] = f"redis://127.0.0.1:{free_port()}/0"
    line = assert_one_line_error(tollway(env, "worker", check=False), 1)
    assert line.startswith("tollway: cannot use Redis (redis_url): ")


@pytest.mark.parametrize("args", [("plugins",), ("openapi", "--plugins", "code")])
def test_a_closed_output_ends_the_command_quietly(
    env: dict[str, str], args: tuple[str, ...]
) -> None:
    # `tollway openapi | head`, with the reader gone before the first write.
    reader, writer = os.pipe()
    os.close(reader)
    try:
        result = subprocess.run(
            [TOLLWAY, *args], env=env, stdout=writer, stderr=subprocess.PIPE, timeout=60
        )
    finally:
        os.close(writer)
    assert result.returncode == 141
    assert result.stderr == b""


def test_an_unexpected_error_is_one_line_unless_asked_for_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(**options: object) -> int:
        raise KeyError("surprise")

    monkeypatch.setattr(manage.list_plugins, "callback", broken)
    assert cli.main(["plugins"]) == 1
    assert capsys.readouterr().err == (
        "tollway: unexpected KeyError: 'surprise' (--traceback shows where)\n"
    )
    with pytest.raises(KeyError, match="surprise"):
        cli.main(["--traceback", "plugins"])


def test_ctrl_c_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(**options: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(manage.list_plugins, "callback", interrupted)
    assert cli.main(["plugins"]) == 130
    assert capsys.readouterr().err == "tollway: interrupted\n"
