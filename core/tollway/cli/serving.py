"""``tollway serve`` and ``tollway worker``: the gateway and its background side."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any, get_args

import click

from tollway.cli.running import (
    Choice,
    Unreachable,
    config_path,
    configured_gateway,
    configured_settings,
    connect,
    ping,
    plugins_option,
    run_on,
    say,
)
from tollway.gateway import Gateway
from tollway.observability.logs import configure_logging
from tollway.server import Server, check_port_free
from tollway.server import serve as run_server
from tollway.settings import DEFAULT_DATABASE_URL

SERVERS: tuple[Server, ...] = get_args(Server)


async def bootstrap_demo(gateway: Gateway) -> str | None:
    """On an empty database: a demo account on every product's richest free plan (it
    has no card to pay for a priced one; a keyless page's visitors' plan, which admits
    no key, is none) and an admin key with every scope. Returns that key, or ``None``
    if data exists."""
    if await gateway.accounts.count():
        return None
    visitors = gateway.registry.visitor_plans
    subscriptions = {
        product: max(free, key=lambda plan: plan.rank).name
        for product, plans in gateway.plans.items()
        if (
            free := [
                plan
                for plan in plans.values()
                if plan.price_cents == 0 and plan.name not in visitors.get(product, ())
            ]
        )
    }
    account = await gateway.accounts.create_account("demo", subscriptions)
    created = await gateway.accounts.create_key(account, name="demo", all_scopes=True, admin=True)
    return created.key


async def _prepare_to_serve(gateway: Gateway) -> str | None:
    """Migrations are applied by ``_run``; then the demo key, if ``serve`` makes one:
    only with ``demo`` on, in the default SQLite file (never in a database the operator
    named, PostgreSQL included) and on an empty database. Says why not otherwise."""
    if not gateway.settings.demo:
        return None
    if not gateway.settings.uses_default_database:
        where = gateway.database.url.render_as_string(hide_password=True)
        say(
            f"no demo account: serve makes one only in the default SQLite file "
            f"{DEFAULT_DATABASE_URL}, not in {where}; use tollway accounts create"
        )
        return None
    key = await bootstrap_demo(gateway)
    if key is None:
        say("existing data kept, no demo account made; tollway accounts list shows them")
    return key


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
    if "qr" in products:
        print(f"tollway: public QR API, no key needed: curl '{base}/api/qr?data=hello' -o qr.png")
    sys.stdout.flush()


@click.command()
@click.option(
    "--host", metavar="HOST", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8000,
    help="TCP port to listen on (default: 8000)",
)
@plugins_option
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    help="server processes sharing the port (without redis_url each counts rate limits "
    "alone) (default: 1)",
)
@click.option(
    "--server",
    type=Choice(SERVERS),
    default="granian",
    help="ASGI server (default: granian)",
)
def serve(host: str, port: int, plugins: list[str] | None, workers: int, server: Server) -> None:
    """Run the gateway."""
    # The server's worker processes build their own gateway from the environment.
    if plugins is not None:
        os.environ["TOLLWAY_PLUGINS"] = ",".join(plugins)
    if config := config_path():
        os.environ["TOLLWAY_CONFIG"] = config
    gateway = configured_gateway(plugins)
    configure_logging(gateway.settings)
    check_port_free(host, port)
    if workers > 1 and not gateway.settings.redis_url:
        say(
            "warning: with several workers and no redis_url every worker keeps "
            "its own rate limit counters; set TOLLWAY_REDIS_URL for exact limits"
        )
    demo_key = run_on(gateway, _prepare_to_serve)
    _print_welcome(gateway, demo_key, f"http://{host}:{port}")
    run_server(host, port, workers=workers, server=server)


@click.command()
@plugins_option
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    help="jobs at once (default: job_concurrency, 8)",
)
def worker(plugins: list[str] | None, concurrency: int | None) -> None:
    """Work background jobs from the Redis job queue (scale-out profile)."""
    overrides: dict[str, Any] = {"run_jobs": True}
    if concurrency is not None:
        overrides["job_concurrency"] = concurrency
    gateway = Gateway(configured_settings(plugins, **overrides))
    configure_logging(gateway.settings)
    from tollway.saq_jobs import SaqJobQueue

    if not isinstance(gateway.jobs, SaqJobQueue):
        raise ValueError(
            "tollway worker works the Redis job queue: set redis_url (TOLLWAY_REDIS_URL) "
            "and leave job_queue at auto or redis"
        )
    asyncio.run(_work(gateway, gateway.jobs.redis_url))


async def _work(gateway: Gateway, redis_url: str) -> None:
    """Run the gateway's background side (job queue worker, pollers, plugin startup)
    until SIGTERM or SIGINT, then stop, letting running jobs finish. The database and
    Redis must answer at start; outages later are waited out."""
    try:
        await connect(gateway.database)
        await ping(redis_url)
    except Unreachable:
        await gateway.database.dispose()
        raise
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    await gateway.start()
    from tollway.app import freeze_garbage

    freeze_garbage()
    try:
        jobs = ", ".join(sorted(gateway.jobs.names())) if hasattr(gateway.jobs, "names") else ""
        say(f"worker ready; jobs: {jobs}")
        await stopping.wait()
    finally:
        await gateway.stop()


SERVING_COMMANDS = (serve, worker)
