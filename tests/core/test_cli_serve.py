"""``tollway serve`` as operators start it: one gateway per port unless ``--workers``
asks for more, and demo data only where it cannot land in a real deployment."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from cli_runner import assert_one_line_error, clean_env, tollway

from tollway.testing import GatewayFactory, GatewayProcess


def test_a_second_serve_on_a_port_in_use_is_refused(tmp_path: Path) -> None:
    database = f"sqlite+aiosqlite:///{tmp_path / 'serve.db'}"
    with GatewayProcess(plugins=["code"], database_url=database) as first:
        env = clean_env(database_url=database, demo="false")
        second = tollway(env, "serve", "--port", str(first.port), "--plugins", "code", check=False)
        line = assert_one_line_error(second, 1)
        assert f"port {first.port} on 127.0.0.1 is already in use" in line
        assert httpx.get(f"{first.url}/healthz").status_code == 200


class TwoWorkers(GatewayProcess):
    """``tollway serve --workers 2``."""

    def _command_arguments(self) -> list[str]:
        return [*super()._command_arguments(), "--workers", "2"]


def test_workers_share_their_own_port(tmp_path: Path) -> None:
    database = f"sqlite+aiosqlite:///{tmp_path / 'serve.db'}"
    with TwoWorkers(plugins=["code"], database_url=database) as gateway:
        assert httpx.get(f"{gateway.url}/healthz").status_code == 200
    assert "already in use" not in gateway.log


async def test_no_demo_data_outside_the_default_sqlite_file(
    gateway_factory: GatewayFactory,
) -> None:
    # PostgreSQL, or SQLite at a path of the operator's choosing: a real deployment.
    gateway = await gateway_factory(plugins=["code"])
    url = gateway.settings.database_url
    process = GatewayProcess(plugins=["code"], database_url=url, demo="true")
    await asyncio.to_thread(process.start)
    try:
        assert (await asyncio.to_thread(httpx.get, f"{process.url}/healthz")).status_code == 200
    finally:
        await asyncio.to_thread(process.stop)
    said = "tollway: no demo account: serve makes one only in the default SQLite file"
    assert said in process.log
    assert "tw_" not in process.log
    assert await gateway.accounts.count() == 0


def test_existing_data_in_the_default_file_is_kept(tmp_path: Path) -> None:
    env = clean_env()
    tollway(env, "accounts", "create", "acme", cwd=tmp_path)
    with GatewayProcess(plugins=["code"], cwd=tmp_path, demo="true") as gateway:
        assert httpx.get(f"{gateway.url}/healthz").status_code == 200
    assert "tollway: existing data kept, no demo account made" in gateway.log
    listing = tollway(env, "accounts", "list", cwd=tmp_path).stdout
    assert [line.split("\t")[1] for line in listing.splitlines()] == ["acme"]
