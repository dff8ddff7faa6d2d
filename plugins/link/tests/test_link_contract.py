"""The redirect host against its contract (``contracts/link-redirect.yaml``), schemathesis
through the repository's harness, on both backends.

The API's contract (``link.yaml``) is run by ``tests/contracts`` like every plugin's;
that run takes the product named like the plugin, and the redirect host is a product of
its own (``link-redirect``), run here with a link for the contract's example code.
"""

from __future__ import annotations

import pytest

from tollway import Gateway, create_app
from tollway.testing import GatewayFactory, gateway_client
from tollway_harness import check_contract, find_contracts_dir
from tollway_link.product import PRODUCT, REDIRECTS

pytestmark = pytest.mark.contract

UNLIMITED = {"plans": {"anonymous": {"limits": {"redirects_per_minute": 10**9}}}}
"""A contract run sends hundreds of redirects from one address; the limit itself is
tested in test_link_redirects.py."""


async def test_the_redirect_host_satisfies_its_contract(gateway_factory: GatewayFactory) -> None:
    setup = await gateway_factory(plugins=["link"], products={REDIRECTS.name: UNLIMITED})
    account = await setup.accounts.create_account("contract", {PRODUCT.name: "business"})
    key = await setup.accounts.create_key(account, name="contract", all_scopes=True)
    async with gateway_client(setup) as client:
        response = await client.post(
            f"{PRODUCT.prefix}/links",
            json={"destination_url": "https://example.com/launch", "code": "launch"},
            headers={"Authorization": f"Bearer {key.key}"},
        )
        assert response.status_code == 201
    # schemathesis drives the app on its own event loop: a gateway of its own.
    app = create_app(Gateway(setup.settings))
    assert REDIRECTS.contract == "link-redirect.yaml"
    check_contract("link-redirect", app=app, contracts_dir=find_contracts_dir())
