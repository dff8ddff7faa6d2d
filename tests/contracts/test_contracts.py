"""Every product's contract against the app that serves it, and no drift between them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tollway import Gateway, load_settings
from tollway.app import create_app
from tollway.plugins import installed_plugins
from tollway.testing import GatewayFactory, product_test_settings
from tollway_harness import check_contract, find_contracts_dir

pytestmark = pytest.mark.contract

CONTRACTS = find_contracts_dir()
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
UNLIMITED = 10**9


def _contract_operations(path: Path) -> set[tuple[str, str]]:
    document = yaml.safe_load(path.read_text())
    return {
        (method.upper(), route)
        for route, item in (document.get("paths") or {}).items()
        for method in item
        if method in HTTP_METHODS
    }


def _product_contracts() -> dict[str, Path]:
    return {path.stem: path for path in sorted(CONTRACTS.glob("*.yaml")) if path.stem != "common"}


CONTRACT_SETTINGS: dict[str, dict[str, Any]] = {
    # Streams the fuzzer opens end after a second rather than at the harness's timeout.
    "chat": {"stream_max_seconds": 1},
}
"""Product settings of the contract runs, where a product's defaults suit production
but would only make the run slow."""


def _contract_config(product: str) -> dict[str, Any]:
    """Config lifting every plan's limits (a contract run sends hundreds of requests
    from one key and one address, and the limits themselves are tested elsewhere), plus
    the product's ``CONTRACT_SETTINGS``."""
    plans = Gateway(load_settings(environ={}, plugins=[product])).plans[product]
    lifted = {
        name: {"requests_per_day": UNLIMITED, "limits": dict.fromkeys(plan.limits, UNLIMITED)}
        for name, plan in plans.items()
    }
    return {product: {"plans": lifted, "settings": dict(CONTRACT_SETTINGS.get(product, {}))}}


@pytest.mark.parametrize("product", sorted(installed_plugins()))
async def test_product_satisfies_its_contract(
    gateway_factory: GatewayFactory,
    product: str,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    products = _contract_config(product)
    products[product]["settings"].update(
        product_test_settings(request.config, product, tmp_path_factory)
    )
    setup = await gateway_factory(plugins=[product], products=products)
    plans = setup.plans[product]
    richest = max(plans.values(), key=lambda plan: plan.rank).name
    account = await setup.accounts.create_account("contract", {product: richest})
    key = await setup.accounts.create_key(account, name="contract", all_scopes=True, admin=True)
    keyed = setup.registry.products[product].keyed
    # schemathesis drives the app on its own event loop: give it a gateway (engine,
    # Redis client) of its own rather than the one bound to this test's loop.
    app = create_app(Gateway(setup.settings))
    check_contract(product, app=app, key=key.key if keyed else None, contracts_dir=CONTRACTS)


async def test_served_operations_equal_the_contracts(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory()
    document = create_app(gateway).openapi_schema.to_schema()
    served = {
        (method.upper(), route)
        for route, item in document["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }
    contracted: set[tuple[str, str]] = set()
    contracts = _product_contracts()
    for product in gateway.registry.products.values():
        assert product.contract is not None, f"product {product.name} declares no contract"
        contracted |= _contract_operations(contracts[Path(product.contract).stem])
    assert served - contracted == set(), "served but not in any contract"
    assert contracted - served == set(), "in a contract but not served"
