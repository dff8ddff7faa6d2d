"""The ``tollway`` command group and :func:`main`, which turns every failure into one line."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import click
import pluggy
from sqlalchemy.exc import DBAPIError

from tollway.cli.manage import MANAGE_COMMANDS
from tollway.cli.plugin_commands import PluginCommands, collect_commands
from tollway.cli.running import (
    FAILED,
    INTERRUPTED,
    OUTPUT_CLOSED,
    REFUSALS,
    REFUSED,
    Unreachable,
    say,
)
from tollway.cli.serving import SERVING_COMMANDS
from tollway.plugins import installed_plugins, plugin_manager
from tollway.registry import RegistrationError
from tollway.settings import load_settings

EPILOG = (
    "An error is one line on stderr, 'tollway: <why>'. Exit status: 0 done, 2 refused "
    "(arguments, configuration, a rule), 1 failed (database or Redis unreachable, port in "
    "use, unexpected error), 130 interrupted, 141 output closed."
)


class _Tollway(click.Group):
    """The root group. The core's commands are there at once; plugins' commands (and
    their deprecated aliases) are loaded the first time a name is not the core's or
    the list is shown, so that the core's commands never wait for them."""

    def __init__(self, manager: pluggy.PluginManager | None, **attributes: Any) -> None:
        super().__init__(**attributes)
        self._manager = manager
        self._plugin_commands: PluginCommands | None = None

    def _plugins(self, ctx: click.Context) -> PluginCommands:
        if self._plugin_commands is None:
            manager = self._manager or _command_plugins(ctx.params.get("config"))
            self._plugin_commands = collect_commands(manager, core=self.commands)
        return self._plugin_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self._plugins(ctx).commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self.commands.get(cmd_name) or self._plugins(ctx).commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands:
            alias = self._plugins(ctx).aliases.get(args[0])
            if alias is not None:
                say(alias.warning)
                args = alias.expand(args)
        return super().resolve_command(ctx, args)


def _command_plugins(config: str | None) -> pluggy.PluginManager:
    """The plugins whose commands ``tollway`` offers: the allow-list of the settings
    (``TOLLWAY_PLUGINS``, the config file) or, when those cannot be loaded, every
    installed plugin, so that ``--help`` works and the command itself reports the error."""
    try:
        return plugin_manager(load_settings(config).plugins)
    except (ValueError, RegistrationError):
        return plugin_manager()


def _print_version(ctx: click.Context, _: click.Parameter, wanted: bool) -> None:
    """``tollway <version>``, then one line per installed plugin and its distribution."""
    if not wanted or ctx.resilient_parsing:
        return
    print(f"tollway {_version('tollway')}")
    for name, point in sorted(installed_plugins().items()):
        distribution = point.dist
        if distribution is None:
            print(f"plugin {name}")
        else:
            print(f"plugin {name}: {distribution.name} {distribution.version}")
    ctx.exit()


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "(not installed)"


def build_cli(manager: pluggy.PluginManager | None = None) -> click.Group:
    """The ``tollway`` command group, with the commands the plugins in ``manager`` add
    (default: the installed plugins, narrowed by ``TOLLWAY_PLUGINS``)."""
    return _Tollway(
        manager,
        name="tollway",
        help="Run and manage a tollway API gateway.",
        epilog=EPILOG,
        commands=[*SERVING_COMMANDS, *MANAGE_COMMANDS],
        context_settings={"help_option_names": ["-h", "--help"]},
        params=[
            click.Option(
                ["--config"], metavar="FILE", help="TOML config file (default: $TOLLWAY_CONFIG)"
            ),
            click.Option(
                ["--traceback"],
                is_flag=True,
                help="on an error, show Python's traceback instead of one line (for bug reports)",
            ),
            click.Option(
                ["--version"],
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_print_version,
                help="print tollway's version and the installed plugins' and exit",
            ),
        ],
    )


def _failure(error: Exception) -> tuple[int, str]:
    """The exit status and the one line an error that ends a command gets."""
    if isinstance(error, REFUSALS):
        status, message = REFUSED, str(error)
    elif isinstance(error, Unreachable | OSError):
        status, message = FAILED, str(error)
    elif isinstance(error, DBAPIError):
        status, message = FAILED, f"database error: {error.orig}"
    elif isinstance(error, click.ClickException):
        status, message = error.exit_code, error.format_message()
    else:
        status = FAILED
        message = f"unexpected {type(error).__name__}: {error} (--traceback shows where)"
    return status, " ".join(message.split())


def _say_usage_error(error: click.UsageError) -> None:
    """One line for a command line that cannot be parsed; a group given no command
    shows its help instead."""
    if isinstance(error, click.exceptions.NoArgsIsHelpError):
        error.show()
        return
    hint = f"; see '{error.ctx.command_path} --help'" if error.ctx else ""
    say(" ".join(error.format_message().split()).rstrip(".") + hint)


def main(argv: Sequence[str] | None = None, *, manager: pluggy.PluginManager | None = None) -> int:
    """Run ``tollway`` (with the plugins in ``manager``, default: the installed ones);
    every failure is one line on stderr and a non-zero status (see the module
    docstring), or a traceback with ``--traceback``. A command line that cannot be
    parsed raises ``SystemExit(2)`` after its line."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    cli = build_cli(manager)
    context: click.Context | None = None
    try:
        context = cli.make_context("tollway", arguments)
        with context:
            status = cli.invoke(context)
        sys.stdout.flush()  # a closed pipe shows here rather than at interpreter exit
    except BrokenPipeError:
        # Python's recipe: nothing more can reach the reader, and flushing at exit
        # must not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return OUTPUT_CLOSED
    except (KeyboardInterrupt, click.Abort):
        say("interrupted")
        return INTERRUPTED
    except click.exceptions.Exit as done:  # --help, --version, ctx.exit(status)
        return done.exit_code
    except click.UsageError as error:
        # Parsing ends the process, as argparse's and click's own parsers do.
        _say_usage_error(error)
        raise SystemExit(REFUSED) from None
    except Exception as error:
        if context.params["traceback"] if context is not None else "--traceback" in arguments:
            raise
        status, message = _failure(error)
        say(message)
    return status if isinstance(status, int) else 0
