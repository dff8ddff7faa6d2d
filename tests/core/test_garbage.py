"""A server process sets its started gateway aside from the garbage collector; an app
among many in one process (a test's) does not."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tollway.app import create_app
from tollway.testing import GatewayFactory


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Nothing frozen before the test, and nothing left frozen after it."""
    gc.unfreeze()
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("unfrozen")
async def test_a_server_app_freezes_its_started_gateway(gateway_factory: GatewayFactory) -> None:
    app = create_app(await gateway_factory(plugins=["code"]), server=True)
    assert gc.get_freeze_count() == 0
    async with app.lifespan():
        assert gc.get_freeze_count() > 10_000


@pytest.mark.usefixtures("unfrozen")
async def test_an_app_among_many_freezes_nothing(gateway_factory: GatewayFactory) -> None:
    app = create_app(await gateway_factory(plugins=["code"]))
    async with app.lifespan():
        assert gc.get_freeze_count() == 0


def test_the_servers_app_is_a_server_app(tmp_path: Path) -> None:
    """``tollway.asgi:app``, what ``tollway serve`` and any ASGI server run."""
    program = (
        "import asyncio, gc\n"
        "import tollway.asgi\n"
        "async def main():\n"
        "    async with tollway.asgi.app.lifespan():\n"
        "        print(gc.get_freeze_count())\n"
        "asyncio.run(main())\n"
    )
    env = {
        "PATH": "",
        "HOME": str(tmp_path),
        "TOLLWAY_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'gc.db'}",
        "TOLLWAY_PLUGINS": "code",
        "TOLLWAY_DEMO": "false",
    }
    run = subprocess.run(
        [sys.executable, "-c", program],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert int(run.stdout.split()[-1]) > 10_000
