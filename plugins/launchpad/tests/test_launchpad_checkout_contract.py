"""The hosted checkout page against its contract (``contracts/launchpad-checkout.yaml``),
schemathesis through the repository's harness, on both backends.

The API's contract (``launchpad.yaml``) is run by ``tests/contracts`` like every
plugin's; that run takes the product named like the plugin, and the page is a product
of its own (``launchpad-checkout``), run here with an open session under the
contract's example id. Its forms carry no valid token, so nothing is ever paid.
"""

from __future__ import annotations

import pytest
import yaml
from sqlalchemy import update

from tollway import Gateway, create_app
from tollway.testing import GatewayFactory, gateway_client
from tollway_harness import check_contract, find_contracts_dir
from tollway_launchpad.checkout_sessions import id_hash
from tollway_launchpad.models import CheckoutSession
from tollway_launchpad.product import CHECKOUT, PRODUCT

pytestmark = pytest.mark.contract

UNLIMITED = {"plans": {"anonymous": {"limits": {"checkout_per_minute": 10**9}}}}
"""A contract run sends hundreds of requests from one address; the limit itself is
tested in test_launchpad_checkout_page.py."""


def _example_session_id() -> str:
    contract = yaml.safe_load((find_contracts_dir() / "launchpad-checkout.yaml").read_text())
    [parameter] = contract["paths"]["/checkout/{session_id}"]["parameters"]
    example: str = parameter["example"]
    return example


async def test_the_checkout_page_satisfies_its_contract(gateway_factory: GatewayFactory) -> None:
    setup = await gateway_factory(plugins=[PRODUCT.name], products={CHECKOUT.name: UNLIMITED})
    account = await setup.accounts.create_account("contract", {PRODUCT.name: "business"})
    key = await setup.accounts.create_key(account, name="contract", all_scopes=True)
    async with gateway_client(setup) as client:
        client.headers["Authorization"] = f"Bearer {key.key}"
        plan = await client.post(
            f"{PRODUCT.prefix}/plans",
            json={
                "name": "Pro",
                "slug": "pro",
                "price_monthly_cents": 1900,
                "price_annual_cents": 0,
            },
        )
        assert plan.status_code == 201, plan.text
        customer = await client.post(
            f"{PRODUCT.prefix}/customers/register",
            json={"email": "ada@example.com", "password": "correct horse battery"},
        )
        assert customer.status_code == 201, customer.text
        session = await client.post(
            f"{PRODUCT.prefix}/checkout/{plan.json()['id']}/session",
            json={
                "customer_token": customer.json()["token"],
                "success_url": "https://shop.example/welcome",
                "cancel_url": "https://shop.example/pricing",
            },
        )
        assert session.status_code == 200, session.text
    async with setup.database.transaction() as transaction:
        await transaction.execute(
            update(CheckoutSession).values(id_hash=id_hash(_example_session_id()))
        )
    # schemathesis drives the app on its own event loop: a gateway of its own.
    app = create_app(Gateway(setup.settings))
    assert CHECKOUT.contract == "launchpad-checkout.yaml"
    report = check_contract("launchpad-checkout", app=app, contracts_dir=find_contracts_dir())
    statuses = {label: set(stats.statuses) for label, stats in report.operations.items()}
    # The example session's page was shown, and its forms (no valid token) refused.
    assert {200, 404} <= statuses["GET /checkout/{session_id}"]
    assert {403, 404} <= statuses["POST /checkout/{session_id}"]
