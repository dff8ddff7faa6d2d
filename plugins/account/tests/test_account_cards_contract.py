"""The "Save a card" page against its contract (``contracts/account-cards.yaml``),
schemathesis through the repository's harness, on both backends.

The API's contract (``account.yaml``) is run by ``tests/contracts`` like every
plugin's; that run takes the product named like the plugin, and the page is a product
of its own (``account-cards``), run here with an open session under the contract's
example id. Its forms carry no valid token, so no card is ever saved.
"""

from __future__ import annotations

import pytest
import yaml
from sqlalchemy import update

from tollway import Gateway, create_app
from tollway.billing.hosted import id_hash
from tollway.testing import GatewayFactory, gateway_client
from tollway_account.models import CardSession
from tollway_account.product import CARDS, PRODUCT
from tollway_harness import find_contracts_dir, run_contract

pytestmark = pytest.mark.contract

UNLIMITED = {"plans": {"anonymous": {"limits": {"cards_per_minute": 10**9}}}}
"""A contract run sends hundreds of requests from one address; the limit itself is
tested in test_account_card_page.py."""


def _example_session_id() -> str:
    contract = yaml.safe_load((find_contracts_dir() / CARDS.contract).read_text())
    [parameter] = contract["paths"]["/account/cards/{session_id}"]["parameters"]
    example: str = parameter["example"]
    return example


async def test_the_card_page_satisfies_its_contract(gateway_factory: GatewayFactory) -> None:
    setup = await gateway_factory(plugins=[PRODUCT.name], products={CARDS.name: UNLIMITED})
    account = await setup.accounts.create_account("contract", {PRODUCT.name: "standard"})
    key = await setup.accounts.create_key(account, name="contract", all_scopes=True)
    async with gateway_client(setup) as client:
        client.headers["Authorization"] = f"Bearer {key.key}"
        started = await client.post(
            f"{PRODUCT.prefix}/payment-methods/setup",
            json={"return_url": "https://app.example/settings/billing"},
        )
        assert started.status_code == 201, started.text
    async with setup.database.transaction() as transaction:
        await transaction.execute(
            update(CardSession).values(id_hash=id_hash(_example_session_id()))
        )
    # schemathesis drives the app on its own event loop: a gateway of its own.
    app = create_app(Gateway(setup.settings))
    assert CARDS.contract == "account-cards.yaml"
    report = run_contract(CARDS.name, app=app, contracts_dir=find_contracts_dir())
    # A form over 4,096 bytes is refused 413 before it is read, whatever it holds: a
    # refusal schemathesis does not count among those of schema-violating data.
    failures = [
        failure
        for failure in report.failures
        if (failure.check, failure.status_code) != ("negative_data_rejection", 413)
    ]
    assert not failures, report.format()
    assert not report.errors, report.format()
    statuses = {label: set(stats.statuses) for label, stats in report.operations.items()}
    # The example session's page was shown, and its forms (no valid token) refused.
    assert {200, 404} <= statuses["GET /account/cards/{session_id}"]
    assert {403, 404} <= statuses["POST /account/cards/{session_id}"]
