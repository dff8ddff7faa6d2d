"""The "Save a card" page against its contract (``contracts/account-cards.yaml``),
schemathesis through the repository's harness, on both backends.

The API's contract (``account.yaml``) is run by ``tests/contracts`` like every
plugin's; that run takes the product named like the plugin, and the page is a product
of its own (``account-cards``), run here with an open session under the contract's
example id. Its forms carry no valid token, so no card is ever saved.
"""

from __future__ import annotations

import pytest
from account_cards_client import open_cards
from sqlalchemy import update

from tollway import Gateway, create_app
from tollway.billing.hosted import id_hash
from tollway.testing import ProductClientFactory, example_session_id
from tollway_account.models import CardSession
from tollway_account.product import CARDS
from tollway_harness import find_contracts_dir, run_contract

pytestmark = pytest.mark.contract

UNLIMITED = {"plans": {"anonymous": {"limits": {"cards_per_minute": 10**9}}}}
"""A contract run sends hundreds of requests from one address; the limit itself is
tested in test_account_card_page.py."""


async def test_the_card_page_satisfies_its_contract(product_client: ProductClientFactory) -> None:
    async with open_cards(product_client, products={CARDS.name: UNLIMITED}) as cards:
        await cards.page_path(return_url="https://app.example/settings/billing")
        contract = find_contracts_dir() / CARDS.contract
        example = example_session_id(contract, "/account/cards/{session_id}")
        async with cards.gateway.database.transaction() as transaction:
            await transaction.execute(update(CardSession).values(id_hash=id_hash(example)))
    # schemathesis drives the app on its own event loop: a gateway of its own.
    app = create_app(Gateway(cards.gateway.settings))
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
