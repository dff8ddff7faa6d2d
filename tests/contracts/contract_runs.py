"""What the contract runs share: the configuration lifting the plans' limits, and each
product's contract file in the repository."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tollway import Gateway, Plan, load_settings
from tollway_harness import find_contracts_dir

CONTRACTS = find_contracts_dir()
UNLIMITED = 10**9

CONTRACT_SETTINGS: dict[str, dict[str, Any]] = {
    # Streams the fuzzer opens end after a second rather than at the harness's timeout.
    "chat": {"stream_max_seconds": 1},
    "pos": {"stream_max_seconds": 1},
}
"""Product settings of the contract runs, where a product's defaults suit production
but would only make the run slow."""


def plans(product: str) -> dict[str, Plan]:
    return Gateway(load_settings(environ={}, plugins=[product])).plans[product]


def richest_plan(product: str) -> str:
    return max(plans(product).values(), key=lambda plan: plan.rank).name


def contract_config(product: str) -> dict[str, Any]:
    """Config lifting every plan's limits (a contract run sends hundreds of requests
    from one key and one address, and the limits themselves are tested elsewhere), plus
    the product's ``CONTRACT_SETTINGS``."""
    lifted = {
        name: {"requests_per_day": UNLIMITED, "limits": dict.fromkeys(plan.limits, UNLIMITED)}
        for name, plan in plans(product).items()
    }
    return {product: {"plans": lifted, "settings": dict(CONTRACT_SETTINGS.get(product, {}))}}


def repository_contract(name: str) -> Path:
    """``contracts/<name>``, where contracts are edited."""
    return CONTRACTS / name
