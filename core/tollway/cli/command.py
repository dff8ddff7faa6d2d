"""The ``tollway`` parser and :func:`main`, which turns every failure into one line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

import pluggy
from sqlalchemy.exc import DBAPIError

from tollway.cli.manage import (
    add_account_commands,
    add_key_commands,
    cmd_db_upgrade,
    cmd_openapi,
    cmd_plugins,
)
from tollway.cli.running import (
    FAILED,
    INTERRUPTED,
    JSON_OPTION,
    OUTPUT_CLOSED,
    PLUGINS_OPTION,
    REFUSALS,
    REFUSED,
    Unreachable,
    say,
)
from tollway.cli.serving import add_serving_commands
from tollway.plugins import plugin_manager
from tollway.registry import RegistrationError
from tollway.settings import load_settings


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Adds ``(default: ...)`` to an option's help unless the help says it already or
    there is nothing to show (unset, off, empty)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        default = action.default
        if "default" in help_text or default in (None, [], argparse.SUPPRESS) or default is False:
            return help_text
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """``tollway``'s parsers, plugins' commands included: options show their defaults."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def _installed_plugins() -> pluggy.PluginManager:
    """The plugins whose commands the parser offers: the allow-list of the settings
    (``TOLLWAY_PLUGINS``, ``TOLLWAY_CONFIG``) or, when those cannot be loaded, every
    installed plugin, so that ``--help`` works and the command itself reports the error."""
    try:
        return plugin_manager(load_settings().plugins)
    except (ValueError, RegistrationError):
        return plugin_manager()


def build_parser(manager: pluggy.PluginManager | None = None) -> argparse.ArgumentParser:
    """The ``tollway`` parser, with the commands the plugins in ``manager`` add
    (default: the installed plugins, narrowed by ``TOLLWAY_PLUGINS``)."""
    parser = _Parser(
        prog="tollway",
        description="Run and manage a tollway API gateway.",
        epilog="An error is one line on stderr, 'tollway: <why>'. Exit status: 0 done, "
        "2 refused (arguments, configuration, a rule), 1 failed (database or Redis "
        "unreachable, port in use, unexpected error), 130 interrupted, 141 output closed.",
    )
    parser.add_argument(
        "--config", metavar="FILE", help="TOML config file (default: $TOLLWAY_CONFIG)"
    )
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="on an error, show Python's traceback instead of one line (for bug reports)",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    add_serving_commands(commands)
    add_account_commands(commands)
    add_key_commands(commands)

    openapi = commands.add_parser("openapi", help="print the served OpenAPI document")
    openapi.add_argument("--plugins", **PLUGINS_OPTION)
    openapi.set_defaults(handler=cmd_openapi)

    db = commands.add_parser("db", help="database migrations").add_subparsers(
        dest="action", required=True
    )
    db.add_parser("upgrade", help="apply all migrations").set_defaults(handler=cmd_db_upgrade)

    plugins = commands.add_parser("plugins", help="installed plugins, scopes and events")
    plugins.add_argument("--json", **JSON_OPTION)
    plugins.set_defaults(handler=cmd_plugins)

    (manager or _installed_plugins()).hook.tollway_register_commands(commands=commands)
    return parser


def _failure(error: Exception) -> tuple[int, str]:
    """The exit status and the one line an error that ends a command gets."""
    if isinstance(error, REFUSALS):
        status, message = REFUSED, str(error)
    elif isinstance(error, Unreachable | OSError):
        status, message = FAILED, str(error)
    elif isinstance(error, DBAPIError):
        status, message = FAILED, f"database error: {error.orig}"
    else:
        status = FAILED
        message = f"unexpected {type(error).__name__}: {error} (--traceback shows where)"
    return status, " ".join(message.split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tollway``; every failure is one line on stderr and a non-zero status (see
    the module docstring), or a traceback with ``--traceback``."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    args: argparse.Namespace | None = None
    try:
        args = build_parser().parse_args(arguments)
        status: int = args.handler(args)
        sys.stdout.flush()  # a closed pipe shows here rather than at interpreter exit
    except BrokenPipeError:
        # Python's recipe: nothing more can reach the reader, and flushing at exit
        # must not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return OUTPUT_CLOSED
    except KeyboardInterrupt:
        say("interrupted")
        return INTERRUPTED
    except Exception as error:
        if args.traceback if args is not None else "--traceback" in arguments:
            raise
        status, message = _failure(error)
        say(message)
    return status
