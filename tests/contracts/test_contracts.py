"""Every product's contract against the app that serves it, and no drift between what the
handlers accept and what the contracts say, operation by operation."""

from __future__ import annotations

import copy

import pytest
from contract_runs import CONTRACTS, contract_config, richest_plan
from litestar import Litestar

from tollway import Gateway, load_settings
from tollway.app import create_app
from tollway.openapi import served_document
from tollway.plugins import installed_plugins
from tollway.testing import GatewayFactory, product_test_settings
from tollway_harness import check_contract, compare_documents

pytestmark = pytest.mark.contract


@pytest.mark.parametrize("product", sorted(installed_plugins()))
async def test_product_satisfies_its_contract(
    gateway_factory: GatewayFactory,
    product: str,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    products = contract_config(product)
    products[product]["settings"].update(
        product_test_settings(request.config, product, tmp_path_factory)
    )
    setup = await gateway_factory(plugins=[product], products=products)
    account = await setup.accounts.create_account("contract", {product: richest_plan(product)})
    key = await setup.accounts.create_key(account, name="contract", all_scopes=True, admin=True)
    keyed = setup.registry.products[product].keyed
    # schemathesis drives the app on its own event loop: give it a gateway (engine,
    # Redis client) of its own rather than the one bound to this test's loop.
    app = create_app(Gateway(setup.settings))
    check_contract(product, app=app, key=key.key if keyed else None, contracts_dir=CONTRACTS)


@pytest.fixture(scope="module")
def app() -> Litestar:
    """Every installed product, never started: only its OpenAPI documents are read."""
    return create_app(Gateway(load_settings(environ={})))


def test_the_handlers_and_the_contracts_agree_operation_by_operation(app: Litestar) -> None:
    # What the code accepts is what Litestar generates from the handlers; what is served
    # is the contracts (tests/contracts/test_served_document.py). compare_documents says
    # what is compared: operations, security, parameters, request bodies in depth, and
    # the success responses' statuses, media types and JSON shapes.
    generated = app.openapi_schema.to_schema()
    assert compare_documents(generated, served_document(app)) == []


def test_the_drift_check_finds_a_missing_enum_value_and_a_wrong_nullable(app: Litestar) -> None:
    """The check above can fail: the drifts contracts/code.yaml once had."""
    drifted = copy.deepcopy(served_document(app))
    schemas = drifted["components"]["schemas"]
    schemas["code.BarcodeRequest"]["properties"]["format"]["enum"].remove("codabar")
    schemas["code.BatchQrResult"]["properties"]["id"]["type"] = ["string", "null"]
    assert compare_documents(app.openapi_schema.to_schema(), drifted) == [
        "POST /v1/code/barcode: request body application/json $.format: enum: "
        'only the code has "codabar"',
        "POST /v1/code/batch/qr: response 200 application/json $.data[].id: type: "
        "only the contract has null",
    ]
