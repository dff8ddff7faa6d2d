"""What every ``tollway`` command shares: exit statuses, the one-line errors, the
gateway the command line configures, and running work on it."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec
from sqlalchemy.exc import DBAPIError

from tollway.accounts import AccountError
from tollway.db import Database
from tollway.db.migrate import MigrationError
from tollway.gateway import Gateway
from tollway.registry import RegistrationError
from tollway.settings import load_settings

T = TypeVar("T")

REFUSED, FAILED = 2, 1
INTERRUPTED, OUTPUT_CLOSED = 128 + signal.SIGINT, 128 + signal.SIGPIPE
REFUSALS = (AccountError, MigrationError, RegistrationError, ValueError)
"""What a command refuses to do (exit 2); ``ValueError`` includes bad settings."""


class Unreachable(Exception):
    """The database or Redis could not be connected to, or refused the connection."""


def say(message: str) -> None:
    print(f"tollway: {message}", file=sys.stderr, flush=True)


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` accepting whole numbers from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low or (high is not None and value > high):
            bounds = f"from {low} to {high}" if high is not None else f"of at least {low}"
            raise argparse.ArgumentTypeError(f"expected a whole number {bounds}, got {text!r}")
        return value

    return parse


def _plugin_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def product_plan(text: str) -> tuple[str, str]:
    product, sep, plan = text.partition("=")
    if not sep or not product.strip() or not plan.strip():
        raise argparse.ArgumentTypeError(f"expected PRODUCT=PLAN, got {text!r}")
    return product.strip(), plan.strip()


def print_json(items: Any) -> None:
    print(msgspec.json.encode(items).decode())


def configured_gateway(args: argparse.Namespace) -> Gateway:
    plugins = getattr(args, "plugins", None)
    return Gateway(load_settings(args.config, plugins=plugins))


async def connect(database: Database) -> None:
    """One round trip first, so that a database out of reach is reported as that, not
    as a failure of whatever the command did first."""
    try:
        async with database.engine.connect() as connection:
            await connection.exec_driver_sql("SELECT 1")
    except (OSError, DBAPIError) as error:
        reason = error.orig if isinstance(error, DBAPIError) else error
        where = database.url.render_as_string(hide_password=True)
        raise Unreachable(f"cannot use the database {where}: {reason}") from error


async def ping(redis_url: str) -> None:
    import redis.asyncio as redis

    client = redis.Redis.from_url(redis_url, socket_connect_timeout=5)
    try:
        await client.ping()
    except (OSError, redis.RedisError) as error:
        raise Unreachable(f"cannot use Redis (redis_url): {error}") from error
    finally:
        await client.aclose()


def run_on(
    gateway: Gateway, work: Callable[[Gateway], Awaitable[T]], *, migrate: bool | None = None
) -> T:
    """``await work(gateway)`` once the database answers and, when ``migrate``
    (default: ``auto_migrate``), is migrated; the engine is closed afterwards."""

    async def run() -> T:
        try:
            await connect(gateway.database)
            if gateway.settings.auto_migrate if migrate is None else migrate:
                await gateway.migrate()
            return await work(gateway)
        finally:
            await gateway.database.dispose()

    return asyncio.run(run())


def run_with_gateway(args: argparse.Namespace, work: Callable[[Gateway], Awaitable[T]]) -> T:
    """Run ``work(gateway)`` on the gateway the command line configures (``--config``,
    ``--plugins`` where the command has it, the environment), migrated first when
    ``auto_migrate`` is on, and closed afterwards. For plugins' commands: a database
    that cannot be reached ends the command with one line, like any ``tollway`` error."""
    return run_on(configured_gateway(args), work)


PLUGINS_OPTION: dict[str, Any] = {
    "type": _plugin_list,
    "metavar": "A,B",
    "help": "comma-separated allow-list of plugins (default: the plugins setting, else all)",
}
JSON_OPTION: dict[str, Any] = {"action": "store_true", "help": "print a JSON array, not lines"}
