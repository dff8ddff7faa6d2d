"""How ``tollway`` is found and what plugins may add to it: ``--version``, ``python -m
tollway``, commands grouped under the registering plugin's product, deprecated aliases
and the one-line usage errors plugins' commands share."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points, version
from pathlib import Path

import click
import pytest
from cli_runner import assert_one_line_error, clean_env, tollway

from tollway import Product, hookimpl
from tollway.cli import CommandRegistrar, main
from tollway.plugins import plugin_manager


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(database_url=f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}")


def test_version_names_tollway_and_every_installed_plugin(env: dict[str, str]) -> None:
    lines = tollway(env, "--version").stdout.splitlines()
    assert lines[0] == f"tollway {version('tollway')}"
    plugins = sorted(entry_points(group="tollway.plugins"), key=lambda point: point.name)
    assert plugins, "no plugin installed to list"
    assert lines[1:] == [
        f"plugin {point.name}: {point.dist.name} {point.dist.version}"
        for point in plugins
        if point.dist is not None
    ]


def test_python_dash_m_tollway_is_the_command(env: dict[str, str]) -> None:
    module = subprocess.run(
        [sys.executable, "-m", "tollway", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert module.returncode == 0, module.stderr
    assert module.stdout == tollway(env, "--help").stdout
    assert "Usage: tollway [OPTIONS] COMMAND [ARGS]..." in module.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("nosuchcommand",), "No such command 'nosuchcommand'; see 'tollway --help'"),
        (("keys", "list"), "Missing option '--account'; see 'tollway keys list --help'"),
        (("serve", "--port", "0"), "'--port': 0 is not in the range 1<=x<=65535"),
        (("serve", "--server", "nginx"), "invalid choice: 'nginx' (choose from granian, uvicorn)"),
        (("accounts", "subscribe", "1", "code"), "expected PRODUCT=PLAN, got 'code'"),
    ],
    ids=["unknown-command", "missing-option", "out-of-range", "bad-choice", "bad-product-plan"],
)
def test_a_usage_error_is_one_line(env: dict[str, str], args: tuple[str, ...], says: str) -> None:
    assert says in assert_one_line_error(tollway(env, *args, check=False), 2)


def test_a_group_without_a_command_shows_its_help(env: dict[str, str]) -> None:
    bare = tollway(env, check=False)
    assert bare.returncode == 2
    assert bare.stdout == ""
    assert "Usage: tollway [OPTIONS] COMMAND" in bare.stderr
    assert "Commands:" in bare.stderr


# Plugins' commands, in process ----------------------------------------------------

CLI_OUTPUT = "widgets: {argument}\n"


@click.group()
def widgets() -> None:
    """The widgets product."""


@widgets.group()
def stock() -> None:
    """Widgets in stock."""


@stock.command("count")
@click.argument("status", type=int)
def count(status: int) -> int:
    """Print STATUS and exit with it."""
    print(CLI_OUTPUT.format(argument=status), end="")
    return status


class WidgetsPlugin:
    """Registers ``products`` and a command group ``commands`` with ``aliases``."""

    def __init__(
        self,
        products: tuple[str, ...] = ("widgets",),
        commands: tuple[click.Command, ...] = (widgets,),
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.products, self.commands, self.aliases = products, commands, aliases

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        for name in self.products:
            register(Product(name, f"/v1/{name}"))

    @hookimpl
    def tollway_register_commands(self, register: CommandRegistrar) -> None:
        for command in self.commands:
            register(command, deprecated_aliases=self.aliases)


def _run(
    capsys: pytest.CaptureFixture[str], *args: str, **plugins: WidgetsPlugin
) -> tuple[int, str, str]:
    status = main(list(args), manager=plugin_manager([], extra=list(plugins.items())))
    out, err = capsys.readouterr()
    return status, out, err


def test_a_plugin_command_runs_under_its_product(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(capsys, "widgets", "stock", "count", "3", widgets=WidgetsPlugin())
    assert (status, out, err) == (3, "widgets: 3\n", "")
    assert "widgets" in _run(capsys, "--help", widgets=WidgetsPlugin())[1]


@pytest.mark.parametrize("status", [0, 5])
def test_a_deprecated_alias_warns_then_does_the_same(
    capsys: pytest.CaptureFixture[str], status: int
) -> None:
    plugin = WidgetsPlugin(aliases={"stock": "stock"})
    new = _run(capsys, "widgets", "stock", "count", str(status), widgets=plugin)
    old = _run(capsys, "stock", "count", str(status), widgets=plugin)
    assert old[:2] == new[:2] == (status, f"widgets: {status}\n")
    assert old[2] == (
        "tollway: warning: 'tollway stock' is deprecated and will be removed; "
        "use 'tollway widgets stock'\n"
    )
    assert "stock" not in _run(capsys, "--help", widgets=plugin)[1].split("Commands:")[1]


@pytest.mark.parametrize(
    ("plugins", "says"),
    [
        (
            {"widgets": WidgetsPlugin(products=())},
            "plugin 'widgets' registers command 'widgets', which names no product: a "
            "plugin's commands go in a group named after a product it registers",
        ),
        (
            {"widgets": WidgetsPlugin(), "gadgets": WidgetsPlugin(products=("gadgets",))},
            "plugin 'gadgets' registers command 'widgets', but product 'widgets' is "
            "registered by plugin 'widgets'",
        ),
        (
            {"widgets": WidgetsPlugin(commands=(widgets, widgets))},
            "plugin 'widgets' registers command 'widgets' twice",
        ),
        (
            {"keys": WidgetsPlugin(products=("keys",), commands=(click.Group("keys"),))},
            "plugin 'keys' registers command 'keys', the name of a core command",
        ),
        (
            {"widgets": WidgetsPlugin(aliases={"db": "stock"})},
            "plugin 'widgets' registers command 'db', the name of a core command",
        ),
        (
            {"widgets": WidgetsPlugin(aliases={"stock": "nothing"})},
            "plugin 'widgets': deprecated alias 'stock' stands for 'tollway widgets "
            "nothing', which is not a command",
        ),
    ],
    ids=[
        "no-product",
        "another-plugins-product",
        "twice",
        "core-name",
        "alias-on-core-name",
        "alias-to-nothing",
    ],
)
def test_a_command_outside_the_plugins_products_fails_start_up(
    capsys: pytest.CaptureFixture[str], plugins: dict[str, WidgetsPlugin], says: str
) -> None:
    status, out, err = _run(capsys, "--help", **plugins)
    assert (status, out) == (2, "")
    assert err == f"tollway: {says}\n"


def test_core_commands_do_not_wait_for_plugins(capsys: pytest.CaptureFixture[str]) -> None:
    # A plugin whose commands are wrong cannot stop the core's own commands.
    status, out, _ = _run(capsys, "db", "--help", widgets=WidgetsPlugin(products=()))
    assert status == 0
    assert "Usage: tollway db" in out
