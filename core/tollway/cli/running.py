"""What every ``tollway`` command shares, plugins' commands included: exit statuses,
the one-line errors, option types, the settings and gateway the command line
configures, and running async work on that gateway."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import click
import msgspec
from sqlalchemy.exc import DBAPIError

from tollway.db import Database
from tollway.db.migrate import MigrationError
from tollway.errors import ApiError
from tollway.gateway import Gateway
from tollway.registry import RegistrationError
from tollway.settings import Settings, load_settings

T = TypeVar("T")

REFUSED, FAILED = 2, 1
INTERRUPTED, OUTPUT_CLOSED = 128 + signal.SIGINT, 128 + signal.SIGPIPE
REFUSALS = (ApiError, MigrationError, RegistrationError, ValueError)
"""What a command refuses to do (exit 2): every typed refusal the gateway's code makes
(an :class:`~tollway.accounts.AccountError`, a declined card), and ``ValueError``
including bad settings."""


class Unreachable(Exception):
    """The database or Redis could not be connected to, or refused the connection."""


def say(message: str) -> None:
    """``tollway: <message>`` on stderr: every error, warning and note of the command."""
    print(f"tollway: {message}", file=sys.stderr, flush=True)


class Choice(click.Choice[str]):
    """click's ``Choice``, refusing in the words of tollway's other usage errors:
    ``invalid choice: 'sms' (choose from live_chat, email)``."""

    def get_invalid_choice_message(self, value: Any, ctx: click.Context | None) -> str:
        return f"invalid choice: {value!r} (choose from {', '.join(self.choices)})"


class ProductPlan(click.ParamType[tuple[str, str]]):
    """``PRODUCT=PLAN``, as ``(product, plan)``."""

    name = "PRODUCT=PLAN"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value
        product, sep, plan = str(value).partition("=")
        if not sep or not product.strip() or not plan.strip():
            self.fail(f"expected PRODUCT=PLAN, got {value!r}", param, ctx)
        return product.strip(), plan.strip()


class PluginList(click.ParamType[list[str]]):
    """A comma-separated list of plugin names."""

    name = "A,B"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> list[str]:
        if isinstance(value, list):
            return value
        return [item.strip() for item in str(value).split(",") if item.strip()]


json_option = click.option("--json", "as_json", is_flag=True, help="print a JSON array, not lines")
"""``--json``, passed as ``as_json``: list commands print a JSON array instead of lines."""

plugins_option = click.option(
    "--plugins",
    type=PluginList(),
    metavar="A,B",
    help="comma-separated allow-list of plugins (default: the plugins setting, else all)",
)
"""``--plugins a,b``, passed as ``plugins`` (``None`` when not given)."""


def print_json(items: Any) -> None:
    print(msgspec.json.encode(items).decode())


def config_path() -> str | None:
    """The running ``tollway`` command's ``--config FILE``, if it was given."""
    config: str | None = click.get_current_context().find_root().params.get("config")
    return config


def configured_settings(plugins: Sequence[str] | None = None, **overrides: Any) -> Settings:
    """The settings of the running ``tollway`` command: its ``--config`` file (else
    ``TOLLWAY_CONFIG``), the environment, then ``plugins`` and ``overrides`` when given.
    Raises ``ValueError`` naming what is wrong, which the command reports (exit 2)."""
    return load_settings(config_path(), plugins=plugins, **overrides)


def configured_gateway(plugins: Sequence[str] | None = None) -> Gateway:
    return Gateway(configured_settings(plugins))


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


def run_with_gateway(
    work: Callable[[Gateway], Awaitable[T]], *, plugins: Sequence[str] | None = None
) -> T:
    """Run ``await work(gateway)`` on the gateway the running ``tollway`` command
    configures (``--config``, the environment, ``plugins`` when given), migrated first
    when ``auto_migrate`` is on, and closed afterwards; returns what ``work`` returns.
    For plugins' commands: a database that cannot be reached ends the command with one
    line, like any ``tollway`` error."""
    return run_on(configured_gateway(plugins), work)
