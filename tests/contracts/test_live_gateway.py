"""A real ``tollway serve`` of every installed product passes schemathesis run against the
document it serves (``tollway-harness run --schema-url auto``), as CI of a deployed build
would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from contract_runs import contract_config, richest_plan

from tollway import Gateway, load_settings
from tollway.plugins import installed_plugins
from tollway.testing import GatewayProcess, product_test_settings

pytestmark = [pytest.mark.contract, pytest.mark.slow]

EXAMPLES = 3
"""Examples per operation and phase: the in-process runs go deeper; this one checks that
what a live gateway serves is what it does, in about a minute."""


def _toml(value: Any) -> str:
    """``value`` (tables of strings, numbers and booleans) as one TOML inline value."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _tollway(environment: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "tollway.cli", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_a_live_gateway_passes_the_contracts_it_serves(
    tmp_path: Path, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    products = sorted(installed_plugins())
    config: dict[str, Any] = {}
    for product in products:
        config.update(contract_config(product))
        config[product]["settings"].update(
            product_test_settings(request.config, product, tmp_path_factory)
        )
    config_file = tmp_path / "tollway.toml"
    config_file.write_text(f"products = {_toml(config)}\n")
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'tollway.db'}"
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")
    }
    environment |= {"TOLLWAY_DATABASE_URL": database_url, "TOLLWAY_CONFIG": str(config_file)}

    with GatewayProcess(config=config_file, database_url=database_url, cwd=tmp_path) as server:
        subscriptions = [f"--subscribe={product}={richest_plan(product)}" for product in products]
        account = _tollway(environment, "accounts", "create", "live", *subscriptions)
        key = _tollway(
            environment, "keys", "create", "--account", account, "--all-scopes", "--admin"
        )
        run = subprocess.run(
            [
                *(sys.executable, "-m", "tollway_harness", "run", "--url", server.url),
                *("--key", key, "--schema-url", "auto", "--max-examples", str(EXAMPLES)),
            ],
            env=environment,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert run.returncode == 0, run.stdout + run.stderr + server.log[-5000:]
    # A plugin may serve more than one product (short links: the API and its redirects).
    served = sorted(Gateway(load_settings(environ={}, demo=False)).registry.products)
    for product in served:
        assert f"{product}: PASS" in run.stdout
    assert f"{len(served)} passed, 0 failed" in run.stdout
