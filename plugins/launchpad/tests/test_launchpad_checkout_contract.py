"""The hosted checkout page against its contract (``contracts/launchpad-checkout.yaml``),
schemathesis through the repository's harness, on both backends.

The API's contract (``launchpad.yaml``) is run by ``tests/contracts`` like every
plugin's; that run takes the product named like the plugin, and the page is a product
of its own (``launchpad-checkout``), run here with an open session under the
contract's example id. Its forms carry no valid token, so nothing is ever paid.
"""

from __future__ import annotations

import pytest
from checkout_client import open_checkout
from sqlalchemy import update

from tollway import Gateway, create_app
from tollway.testing import ProductClientFactory, example_session_id
from tollway_harness import check_contract, find_contracts_dir
from tollway_launchpad.checkout_sessions import id_hash
from tollway_launchpad.models import CheckoutSession
from tollway_launchpad.product import CHECKOUT

pytestmark = pytest.mark.contract

UNLIMITED = {"plans": {"anonymous": {"limits": {"checkout_per_minute": 10**9}}}}
"""A contract run sends hundreds of requests from one address; the limit itself is
tested in test_launchpad_checkout_page.py."""


async def test_the_checkout_page_satisfies_its_contract(
    product_client: ProductClientFactory,
) -> None:
    async with open_checkout(product_client, products={CHECKOUT.name: UNLIMITED}) as checkout:
        await checkout.session_url()
        contract = find_contracts_dir() / "launchpad-checkout.yaml"
        example = example_session_id(contract, "/checkout/{session_id}")
        async with checkout.gateway.database.transaction() as transaction:
            await transaction.execute(update(CheckoutSession).values(id_hash=id_hash(example)))
    # schemathesis drives the app on its own event loop: a gateway of its own.
    app = create_app(Gateway(checkout.gateway.settings))
    assert CHECKOUT.contract == "launchpad-checkout.yaml"
    report = check_contract("launchpad-checkout", app=app, contracts_dir=find_contracts_dir())
    statuses = {label: set(stats.statuses) for label, stats in report.operations.items()}
    # The example session's page was shown, and its forms (no valid token) refused.
    assert {200, 404} <= statuses["GET /checkout/{session_id}"]
    assert {403, 404} <= statuses["POST /checkout/{session_id}"]
