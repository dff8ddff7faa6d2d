"""What the webhook engine refuses is a typed API error, answering with its class's
status and a message ready for the client; a product's own mistake is not."""

from __future__ import annotations

import pytest

from tollway import ApiError
from tollway.webhooks import WebhookError
from tollway.webhooks.testing import WebhookGateway


async def test_a_refused_registration_says_what_was_refused(
    webhook_gateway: WebhookGateway,
) -> None:
    gateway = await webhook_gateway(start=False)
    account = await gateway.accounts.create_account("acme")
    with pytest.raises(WebhookError) as caught:
        await gateway.webhooks.register_endpoint(account, "https://93.184.215.14/", [])
    assert caught.value.status_code == 400
    assert caught.value.message == (
        "Cannot register webhook endpoint: events must be a non-empty list of event names"
    )


async def test_an_endpoint_for_an_unknown_account_is_a_404(
    webhook_gateway: WebhookGateway,
) -> None:
    gateway = await webhook_gateway(start=False)
    with pytest.raises(WebhookError) as caught:
        await gateway.webhooks.register_endpoint(999, "https://93.184.215.14/", ["order.paid"])
    assert caught.value.status_code == 404
    assert caught.value.message == "Cannot register webhook endpoint: no account with id 999"


async def test_emitting_an_unregistered_event_is_the_products_bug_not_the_clients(
    webhook_gateway: WebhookGateway,
) -> None:
    gateway = await webhook_gateway(start=False)
    account = await gateway.accounts.create_account("acme")
    async with gateway.database.transaction() as session:
        with pytest.raises(ValueError, match="unknown webhook event") as caught:
            await gateway.webhooks.emit(session, account, "order.shipped", {})
    assert not isinstance(caught.value, ApiError)  # answered as a 500, and logged
