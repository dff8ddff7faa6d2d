"""The invoice PDFs against their contract (``contracts/account-invoices.yaml``), and the
API's (``account.yaml``) on an account that pays, schemathesis through the repository's
harness, on both backends.

``tests/contracts`` runs the API's contract like every plugin's, on an account billed
nothing, where an invoice or a card can only be not found; the PDFs are a product of
their own (``account-invoices``). Here the account pays for chat with a saved card: its
invoice takes the contracts' example id, its card is their example ``pm_1``, and the
deployment's link secret is the one the example signature was made with, so the
example link (expiring in 2100) is valid.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from account_client import GOOD_CARD, PRICED
from sqlalchemy import update

from tollway import Gateway, create_app
from tollway.billing import TENANT, BillingInvoice
from tollway.testing import GatewayFactory, gateway_client
from tollway_account.product import INVOICES, LEDGER, PRODUCT
from tollway_harness import find_contracts_dir, run_contract

pytestmark = pytest.mark.contract

EXAMPLE_SECRET = "contract-example-invoice-pdf-secret"
"""The ``invoice_pdf_secret`` the contract's example signature was made with (for
account 1, the first of an empty database)."""
PRODUCTS = {
    "chat": PRICED["chat"],
    PRODUCT.name: {"settings": {"invoice_pdf_secret": EXAMPLE_SECRET}},
    # A contract run sends hundreds of requests from one address: no per-address limit.
    INVOICES.name: {"plans": {"anonymous": {"limits": {"pdfs_per_minute": 10**9}}}},
}
PDF = "GET /account/invoices/{invoice_id}/pdf"


def _example_link() -> dict[str, Any]:
    """The contract's example invoice id, ``expires`` and ``signature``, by name."""
    contract = yaml.safe_load((find_contracts_dir() / f"{INVOICES.name}.yaml").read_text())
    parameters = contract["paths"]["/account/invoices/{invoice_id}/pdf"]["parameters"]
    return {each["name"]: each["example"] for each in parameters if "example" in each}


async def _paying_account(gateway_factory: GatewayFactory) -> tuple[Gateway, str]:
    """A gateway whose one account has paid chat's first month with its one card, and a
    key of that account holding every scope."""
    setup = await gateway_factory(plugins=[PRODUCT.name, "chat"], products=PRODUCTS)
    account_id = await setup.accounts.create_account("contract", {PRODUCT.name: "standard"})
    async with setup.database.transaction() as session:
        await setup.billing.wallet(session, LEDGER, account_id).add(TENANT, GOOD_CARD)
    await setup.accounts.subscribe(account_id, "chat", "pro")
    async with setup.database.transaction() as session:
        await session.execute(update(BillingInvoice).values(uid=_example_link()["invoice_id"]))
    key = await setup.accounts.create_key(account_id, name="contract", all_scopes=True)
    return setup, key.key


def _run(setup: Gateway, product: str, key: str | None = None) -> dict[str, set[int]]:
    # schemathesis drives the app on its own event loop: a gateway of its own.
    app = create_app(Gateway(setup.settings))
    report = run_contract(product, app=app, key=key, contracts_dir=find_contracts_dir())
    assert report.ok, report.format()
    return {label: set(stats.statuses) for label, stats in report.operations.items()}


async def test_the_invoice_pdfs_satisfy_their_contract(gateway_factory: GatewayFactory) -> None:
    setup, _ = await _paying_account(gateway_factory)
    link = _example_link()
    async with gateway_client(setup) as client:
        example = await client.get(f"{INVOICES.prefix}/{link.pop('invoice_id')}/pdf", params=link)
    assert example.status_code == 200, f"the contract's example link is refused: {example.text}"

    statuses = _run(setup, INVOICES.name)
    # The example link's PDF was served, and links schemathesis made up refused.
    assert {200, 403} <= statuses[PDF]


async def test_the_api_satisfies_its_contract_for_an_account_that_pays(
    gateway_factory: GatewayFactory,
) -> None:
    setup, key = await _paying_account(gateway_factory)

    statuses = _run(setup, PRODUCT.name, key)
    # The example invoice and card were found; the card, the last of an account paying
    # for chat, was kept.
    assert 200 in statuses["GET /v1/account/invoices/{invoice_id}"]
    assert 200 in statuses["PATCH /v1/account/payment-methods/{payment_method_id}"]
    assert 409 in statuses["DELETE /v1/account/payment-methods/{payment_method_id}"]
