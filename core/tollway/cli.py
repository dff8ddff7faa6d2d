"""The ``tollway`` command. Scripts depend on its output: commands that create
something print the new id or key alone on stdout; messages go to stderr."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import pluggy

from tollway.accounts import AccountError
from tollway.db.migrate import MigrationError
from tollway.gateway import Gateway
from tollway.observability.logs import configure_logging
from tollway.plugins import plugin_manager
from tollway.registry import RegistrationError
from tollway.settings import load_settings

T = TypeVar("T")


def _plugin_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _gateway(args: argparse.Namespace) -> Gateway:
    plugins = getattr(args, "plugins", None)
    return Gateway(load_settings(args.config, plugins=plugins))


async def _ready(gateway: Gateway) -> Gateway:
    if gateway.settings.auto_migrate:
        await gateway.migrate()
    return gateway


def _run(gateway: Gateway, work: Any) -> Any:
    async def main() -> Any:
        try:
            await _ready(gateway)
            return await work
        finally:
            await gateway.database.dispose()

    return asyncio.run(main())


def run_with_gateway(args: argparse.Namespace, work: Callable[[Gateway], Awaitable[T]]) -> T:
    """Run ``work(gateway)`` on the gateway the command line configures (``--config``,
    ``--plugins`` where the command has it, the environment), migrated first when
    ``auto_migrate`` is on, and closed afterwards. For plugins' commands."""
    gateway = _gateway(args)
    result: T = _run(gateway, work(gateway))
    return result


async def bootstrap_demo(gateway: Gateway) -> str | None:
    """On an empty database: a demo account on every product's richest plan and an
    admin key with every scope. Returns that key, or ``None`` if data exists."""
    if await gateway.accounts.count():
        return None
    subscriptions = {
        product: max(plans.values(), key=lambda plan: plan.rank).name
        for product, plans in gateway.plans.items()
        if plans
    }
    account = await gateway.accounts.create_account("demo", subscriptions)
    created = await gateway.accounts.create_key(account, name="demo", all_scopes=True, admin=True)
    return created.key


async def _prepare_to_serve(gateway: Gateway) -> str | None:
    """Migrations are applied by ``_run``; then the demo data, if wanted."""
    return await bootstrap_demo(gateway) if gateway.settings.demo else None


def _print_welcome(gateway: Gateway, demo_key: str | None, base: str) -> None:
    products = gateway.registry.products
    if demo_key:
        print(f"tollway: demo account created; its API key (shown once):\n\n  {demo_key}\n")
        if "code" in products:
            body = '{"data": "hello"}'
            print(
                f"  curl -X POST {base}/v1/code/qr -H 'Authorization: Bearer {demo_key}' \\\n"
                f"       -H 'Content-Type: application/json' -d '{body}' -o qr.png\n"
            )
    elif gateway.settings.demo:
        print(
            "tollway: existing data kept; new key: tollway keys create --account 1 --all-scopes",
            file=sys.stderr,
        )
    if "qr" in products:
        print(f"tollway: public QR API, no key needed: curl '{base}/api/qr?data=hello' -o qr.png")
    sys.stdout.flush()


def cmd_serve(args: argparse.Namespace) -> int:
    if args.plugins is not None:
        os.environ["TOLLWAY_PLUGINS"] = ",".join(args.plugins)
    if args.config:
        os.environ["TOLLWAY_CONFIG"] = args.config
    gateway = _gateway(args)
    configure_logging(gateway.settings)
    if args.workers > 1 and not gateway.settings.redis_url:
        print(
            "tollway: warning: with several workers and no redis_url every worker keeps "
            "its own rate limit counters; set TOLLWAY_REDIS_URL for exact limits",
            file=sys.stderr,
        )
    demo_key = _run(gateway, _prepare_to_serve(gateway))
    _print_welcome(gateway, demo_key, f"http://{args.host}:{args.port}")
    from tollway.server import serve

    serve(args.host, args.port, workers=args.workers, server=args.server)
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {"run_jobs": True}
    if args.concurrency is not None:
        overrides["job_concurrency"] = args.concurrency
    gateway = Gateway(load_settings(args.config, plugins=args.plugins, **overrides))
    configure_logging(gateway.settings)
    from tollway.saq_jobs import SaqJobQueue

    if not isinstance(gateway.jobs, SaqJobQueue):
        raise ValueError(
            "tollway worker works the Redis job queue: set redis_url (TOLLWAY_REDIS_URL) "
            "and leave job_queue at auto or redis"
        )
    asyncio.run(_work(gateway))
    return 0


async def _work(gateway: Gateway) -> None:
    """Run the gateway's background side (job queue worker, pollers, plugin startup)
    until SIGTERM or SIGINT, then stop, letting running jobs finish."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    await gateway.start()
    try:
        jobs = ", ".join(sorted(gateway.jobs.names())) if hasattr(gateway.jobs, "names") else ""
        print(f"tollway: worker ready; jobs: {jobs}", file=sys.stderr, flush=True)
        await stopping.wait()
    finally:
        await gateway.stop()


def cmd_accounts_create(args: argparse.Namespace) -> int:
    subscriptions: dict[str, str] = {}
    for item in args.subscribe:
        product, sep, plan = item.partition("=")
        if not sep or not product or not plan:
            raise AccountError(f"--subscribe expects PRODUCT=PLAN, got {item!r}")
        subscriptions[product] = plan
    gateway = _gateway(args)
    print(_run(gateway, gateway.accounts.create_account(args.name, subscriptions)))
    return 0


def cmd_keys_create(args: argparse.Namespace) -> int:
    gateway = _gateway(args)
    expires = timedelta(days=args.expires_in) if args.expires_in is not None else None
    created = _run(
        gateway,
        gateway.accounts.create_key(
            args.account,
            name=args.name,
            scopes=args.scope,
            all_scopes=args.all_scopes,
            admin=args.admin,
            expires_in=expires,
        ),
    )
    print(created.key)
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    gateway = _gateway(args)
    for key in _run(gateway, gateway.accounts.list_keys(args.account)):
        state = "revoked" if key.revoked_at else "active"
        expiry = key.expires_at.isoformat() if key.expires_at else "never"
        admin = " admin" if key.is_admin else ""
        print(
            f"{key.id}\t{key.prefix}\t{key.name}\t{state}{admin}\texpires {expiry}\t"
            f"{','.join(key.scopes)}"
        )
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    gateway = _gateway(args)
    if not _run(gateway, gateway.accounts.revoke_key(args.key_id)):
        raise AccountError(f"no active key with id {args.key_id}")
    print(f"revoked key {args.key_id}", file=sys.stderr)
    return 0


def cmd_openapi(args: argparse.Namespace) -> int:
    from tollway.app import create_app

    app = create_app(_gateway(args))
    json.dump(app.openapi_schema.to_schema(), sys.stdout, indent=2)
    print()
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    gateway = Gateway(load_settings(args.config))

    async def upgrade() -> None:
        try:
            await gateway.migrate()
        finally:
            await gateway.database.dispose()

    asyncio.run(upgrade())
    print("database is at the head of every migration branch", file=sys.stderr)
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    gateway = _gateway(args)
    registry = gateway.registry
    for name, product in sorted(registry.products.items()):
        plugin = registry.owners[f"product:{name}"]
        print(f"{plugin}: product {name} at {product.prefix}")
        for scope in (s for s in registry.scopes.values() if s.plugin == plugin):
            print(f"  scope {scope.name}: {scope.description}")
        for event in (e for e in registry.events.values() if e.plugin == plugin):
            print(f"  event {event.name}: {event.description}")
        plans = gateway.plans.get(name, {})
        print(f"  plans {', '.join(plans)}")
    return 0


def build_parser(manager: pluggy.PluginManager | None = None) -> argparse.ArgumentParser:
    """The ``tollway`` parser, with the commands the plugins in ``manager`` add
    (default: the installed plugins, narrowed by ``TOLLWAY_PLUGINS``)."""
    parser = argparse.ArgumentParser(prog="tollway", description=__doc__)
    parser.add_argument("--config", help="TOML config file (default: $TOLLWAY_CONFIG)")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the gateway")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--plugins", type=_plugin_list, help="comma-separated allow-list")
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument("--server", choices=("granian", "uvicorn"), default="granian")
    serve.set_defaults(handler=cmd_serve)

    worker = commands.add_parser(
        "worker", help="work background jobs from the Redis job queue (scale-out profile)"
    )
    worker.add_argument("--plugins", type=_plugin_list, help="comma-separated allow-list")
    worker.add_argument("--concurrency", type=int, help="jobs at once (default job_concurrency)")
    worker.set_defaults(handler=cmd_worker)

    accounts = commands.add_parser("accounts", help="manage accounts").add_subparsers(
        dest="action", required=True
    )
    create_account = accounts.add_parser("create", help="create an account; prints its id")
    create_account.add_argument("name")
    create_account.add_argument("--subscribe", action="append", default=[], metavar="PRODUCT=PLAN")
    create_account.set_defaults(handler=cmd_accounts_create)

    keys = commands.add_parser("keys", help="manage API keys").add_subparsers(
        dest="action", required=True
    )
    create_key = keys.add_parser("create", help="create a key; prints the full key once")
    create_key.add_argument("--account", type=int, required=True)
    create_key.add_argument("--name", default="default")
    create_key.add_argument("--scope", action="append", default=[])
    create_key.add_argument("--all-scopes", action="store_true")
    create_key.add_argument("--admin", action="store_true")
    create_key.add_argument("--expires-in", type=float, metavar="DAYS")
    create_key.set_defaults(handler=cmd_keys_create)
    list_keys = keys.add_parser("list", help="list an account's keys (prefix only)")
    list_keys.add_argument("--account", type=int, required=True)
    list_keys.set_defaults(handler=cmd_keys_list)
    revoke = keys.add_parser("revoke", help="revoke a key by id")
    revoke.add_argument("key_id", type=int)
    revoke.set_defaults(handler=cmd_keys_revoke)

    openapi = commands.add_parser("openapi", help="print the served OpenAPI document")
    openapi.add_argument("--plugins", type=_plugin_list)
    openapi.set_defaults(handler=cmd_openapi)

    db = commands.add_parser("db", help="database migrations").add_subparsers(
        dest="action", required=True
    )
    db.add_parser("upgrade", help="apply all migrations").set_defaults(handler=cmd_db_upgrade)

    plugins = commands.add_parser("plugins", help="installed plugins, scopes and events")
    plugins.set_defaults(handler=cmd_plugins)

    if manager is None:
        manager = plugin_manager(load_settings().plugins)
    manager.hook.tollway_register_commands(commands=commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except (RegistrationError, ValueError) as error:
        print(f"tollway: {error}", file=sys.stderr)
        return 2
    try:
        result: int = args.handler(args)
    except (AccountError, MigrationError, RegistrationError, ValueError) as error:
        print(f"tollway: {error}", file=sys.stderr)
        return 2
    return result


if __name__ == "__main__":
    sys.exit(main())
