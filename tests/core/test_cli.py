"""The ``tollway`` command as scripts use it, in real processes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import httpx
import pytest

from tollway import Gateway, Product, hookimpl
from tollway.cli import CommandRegistrar, build_cli, main, run_with_gateway
from tollway.plugins import plugin_manager
from tollway.testing import free_port


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")
    }
    environment["TOLLWAY_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    return environment


def tollway(
    env: dict[str, str], *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "tollway.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"tollway {' '.join(args)} failed:\n{result.stderr}")
    return result


def test_accounts_and_keys_lifecycle(env: dict[str, str]) -> None:
    account = tollway(env, "accounts", "create", "acme", "--subscribe", "code=pro").stdout
    assert re.fullmatch(r"\d+\n", account)
    key = tollway(
        env,
        "keys",
        "create",
        "--account",
        account.strip(),
        "--name",
        "ci",
        "--scope",
        "code:qr:generate",
        "--expires-in",
        "30",
    ).stdout
    assert re.fullmatch(r"tw_[A-Za-z0-9]{8}_[A-Za-z0-9]{32}\n", key)
    listing = tollway(env, "keys", "list", "--account", account.strip()).stdout
    assert key.strip()[:11] in listing
    assert key.strip() not in listing
    key_id = listing.split("\t", 1)[0]
    tollway(env, "keys", "revoke", key_id)
    assert "\trevoked\t" in tollway(env, "keys", "list", "--account", account.strip()).stdout


@pytest.mark.parametrize(
    "args",
    [
        ("accounts", "create", "acme", "--subscribe", "code=platinum"),
        ("accounts", "create", "acme", "--subscribe", "nothing=free"),
        ("keys", "create", "--account", "999", "--all-scopes"),
        ("keys", "revoke", "999"),
    ],
    ids=["unknown-plan", "unknown-product", "unknown-account", "unknown-key"],
)
def test_mistakes_exit_2_with_a_message(env: dict[str, str], args: tuple[str, ...]) -> None:
    result = tollway(env, *args, check=False)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("tollway: ")


def test_keys_with_unknown_scopes_are_refused(env: dict[str, str]) -> None:
    account = tollway(env, "accounts", "create", "acme").stdout.strip()
    result = tollway(
        env, "keys", "create", "--account", account, "--scope", "code:qr:nope", check=False
    )
    assert result.returncode == 2
    assert "code:qr:nope" in result.stderr


def test_openapi_prints_the_served_document(env: dict[str, str]) -> None:
    document = json.loads(tollway(env, "openapi", "--plugins", "code").stdout)
    assert document["openapi"].startswith("3.1")
    assert "/v1/code/qr" in document["paths"]
    assert "security" not in document["paths"]["/v1/code/types"]["get"]
    assert document["paths"]["/v1/code/qr"]["post"]["security"] == [{"apiKey": []}]


def test_plugins_lists_scopes(env: dict[str, str]) -> None:
    output = tollway(env, "plugins").stdout
    assert "product code at /v1/code" in output
    assert "scope code:qr:generate" in output


@pytest.fixture
def served(env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``tollway serve`` on a fresh database in the default file, ``./tollway.db``, the
    one place it makes a demo account."""
    port = free_port()
    del env["TOLLWAY_DATABASE_URL"]
    process = subprocess.Popen(
        [sys.executable, "-m", "tollway.cli", "serve", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        key = None
        deadline = time.monotonic() + 60
        for line in process.stdout:
            match = re.search(r"tw_[A-Za-z0-9]{8}_[A-Za-z0-9]{32}", line)
            if match:
                key = match.group(0)
                break
            assert time.monotonic() < deadline, "serve printed no demo key"
        assert key is not None
        base = f"http://127.0.0.1:{port}"
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{base}/v1/code/types", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base, key
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)


def test_serve_prints_a_demo_key_that_works(served: tuple[str, str]) -> None:
    base, key = served
    response = httpx.post(
        f"{base}/v1/code/qr", json={"data": "hello"}, headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    assert response.content.startswith(b"\x89PNG")
    assert int(response.headers["x-ratelimit-remaining"]) >= 0
    assert httpx.post(f"{base}/v1/code/qr", json={"data": "hello"}).status_code == 401


def test_the_harness_passes_against_the_served_gateway(served: tuple[str, str]) -> None:
    base, key = served
    result = subprocess.run(
        [
            *(sys.executable, "-m", "tollway_harness", "run", "--url", base, "--key", key),
            *("--product", "code", "--max-examples", "5"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 0 failed" in result.stdout


@click.command()
@click.argument("name")
def greet(name: str) -> None:
    """Create an account named NAME and greet it."""

    async def work(gateway: Gateway) -> int:
        return await gateway.accounts.create_account(name)

    account = run_with_gateway(work)
    print(f"hello {name}, account {account}")


class GreeterCommands:
    """A plugin adding ``tollway greet NAME`` (the command of its product ``greet``),
    which creates an account and says so."""

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(Product("greet", "/v1/greet"))

    @hookimpl
    def tollway_register_commands(self, register: CommandRegistrar) -> None:
        register(greet)


def test_plugins_add_commands(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOLLWAY_DATABASE_URL", env["TOLLWAY_DATABASE_URL"])
    manager = plugin_manager([], extra=[("greeter", GreeterCommands())])
    assert main(["greet", "ada"], manager=manager) == 0
    assert capsys.readouterr().out == "hello ada, account 1\n"
    listing = tollway(env, "keys", "create", "--account", "1", "--scope", "code:usage:read")
    assert listing.stdout.startswith("tw_")  # the account really exists


def test_every_option_says_what_it_does_and_its_default() -> None:
    root = build_cli(plugin_manager([]))
    contexts = [click.Context(root, info_name="tollway")]
    while contexts:
        context = contexts.pop()
        command = context.command
        text = " ".join(command.get_help(context).split())
        if isinstance(command, click.Group):
            for name in command.list_commands(context):
                child = command.get_command(context, name)
                assert child is not None
                contexts.append(click.Context(child, info_name=name, parent=context))
        for param in command.get_params(context):
            if isinstance(param, click.Argument):
                # Arguments have no help of their own: their command's says what they are.
                assert param.make_metavar(context) in (command.help or ""), (
                    f"{context.command_path} {param.name}"
                )
            elif isinstance(param, click.Option) and param.opts != ["-h", "--help"]:
                assert param.help, f"{context.command_path} {param.name}"
                default = param.to_info_dict()["default"]
                if default not in (None, (), [], False):
                    assert f"(default: {default})" in text, f"{context.command_path} {param.name}"
