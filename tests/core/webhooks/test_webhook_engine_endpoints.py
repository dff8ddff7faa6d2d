"""Endpoint management: validation (HTTPS, SSRF, events), secrets, tests, redelivery."""

from __future__ import annotations

import asyncio

import pytest

from tollway import Gateway
from tollway.webhooks import WebhookError
from tollway.webhooks.testing import Reply, WebhookGateway, WebhookTestReceiver


async def _account(gateway: Gateway) -> int:
    return await gateway.accounts.create_account("acme")


@pytest.mark.parametrize(
    ("url", "events", "message"),
    [
        ("http://93.184.215.14/hooks", ["order.created"], "must use https://"),
        ("https:///hooks", ["order.created"], "has no host"),
        ("https://user:pw@93.184.215.14/", ["order.created"], "must not contain credentials"),
        ("https://10.1.2.3/hooks", ["order.created"], "10.1.2.3, a private address"),
        ("https://127.0.0.1/hooks", ["order.created"], "a loopback address"),
        ("https://localhost/hooks", ["order.created"], "a loopback address"),
        ("https://[::1]/hooks", ["order.created"], "a loopback address"),
        ("https://[::ffff:192.168.1.1]/", ["order.created"], "a private address"),
        ("https://169.254.10.10/", ["order.created"], "a link-local address"),
        ("https://0.0.0.0/", ["order.created"], "an unspecified address"),
        ("https://224.0.0.9/", ["order.created"], "a multicast address"),
        ("https://100.64.0.1/", ["order.created"], "not a globally routable address"),
        ("https://169.254.169.254/latest/meta-data/", ["order.created"], "cloud metadata"),
        ("https://[fd00:ec2::254]/", ["order.created"], "cloud metadata"),
        ("https://93.184.215.14/hooks", [], "non-empty list"),
        ("https://93.184.215.14/hooks", ["order.shipped"], "unknown event(s): order.shipped"),
        ("https://93.184.215.14/hooks", ["order.paid", "order.paid"], "duplicate event(s)"),
    ],
)
async def test_bad_registrations_are_refused_with_a_clear_message(
    webhook_gateway: WebhookGateway, url: str, events: list[str], message: str
) -> None:
    gateway = await webhook_gateway(start=False, webhooks_allow_private_addresses=False)
    account = await _account(gateway)
    with pytest.raises(WebhookError) as caught:
        await gateway.webhooks.register_endpoint(account, url, events)
    assert message in str(caught.value)
    assert caught.value.status_code == 400
    assert (await gateway.webhooks.list_endpoints(account))[1] == 0


async def test_metadata_addresses_stay_refused_when_private_ones_are_allowed(
    webhook_gateway: WebhookGateway,
) -> None:
    gateway = await webhook_gateway(start=False, webhooks_allow_private_addresses=True)
    account = await _account(gateway)
    with pytest.raises(WebhookError, match="cloud metadata"):
        await gateway.webhooks.register_endpoint(
            account, "https://169.254.169.254/", ["order.paid"]
        )
    endpoint, _ = await gateway.webhooks.register_endpoint(
        account, "https://10.1.2.3/hooks", ["order.paid"]
    )
    assert endpoint.is_active


async def test_a_public_endpoint_is_registered_and_its_secret_shown_once(
    webhook_gateway: WebhookGateway,
) -> None:
    gateway = await webhook_gateway(start=False, webhooks_allow_private_addresses=False)
    account = await _account(gateway)
    endpoint, secret = await gateway.webhooks.register_endpoint(
        account, "https://93.184.215.14/hooks", ["order.paid", "webhook.test"], "billing"
    )
    assert secret.startswith("whsec_")
    assert len(secret) == 38
    assert endpoint.secret_prefix == secret[:8]
    assert (endpoint.url, endpoint.events, endpoint.description) == (
        "https://93.184.215.14/hooks",
        ("order.paid", "webhook.test"),
        "billing",
    )
    assert secret not in repr(await gateway.webhooks.list_endpoints(account))
    rotated = await gateway.webhooks.rotate_secret(account, endpoint.id)
    assert rotated not in (None, secret)
    [listed], total = await gateway.webhooks.list_endpoints(account)
    assert (listed.secret_prefix, total) == ((rotated or "")[:8], 1)


async def test_the_delivery_time_check_refuses_what_registration_would(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    permissive = await webhook_gateway(start=False)
    account = await _account(permissive)
    endpoint, secret = await permissive.webhooks.register_endpoint(
        account, receiver.url(), ["order.paid"]
    )
    receiver.trust(secret)
    strict = await webhook_gateway(
        same_database_as=permissive,
        webhooks_allow_private_addresses=False,
        webhooks_retry_schedule=[0],
    )
    async with strict.database.transaction() as session:
        await strict.webhooks.emit(session, account, "order.paid", {})
    async with asyncio.timeout(5):
        while True:
            listed = await strict.webhooks.list_deliveries(account, endpoint.id)
            assert listed is not None
            if listed[0] and listed[0][0].status != "pending":
                break
            await asyncio.sleep(0.05)
    [delivery] = listed[0]
    assert delivery.status == "dead"
    assert "127.0.0.1, a loopback address" in (delivery.last_error or "")
    assert receiver.requests == []


async def test_send_test_reports_the_receivers_answer_and_records_it(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway(start=False)
    account = await _account(gateway)
    endpoint, secret = await gateway.webhooks.register_endpoint(
        account, receiver.url(), ["order.paid"]
    )
    receiver.trust(secret)
    receiver.script = [Reply(204), Reply(503)]
    ok = await gateway.webhooks.send_test(account, endpoint.id)
    assert ok is not None
    assert (ok.succeeded, ok.status_code, ok.error) == (True, 204, None)
    failing = await gateway.webhooks.send_test(account, endpoint.id)
    assert failing is not None
    assert (failing.succeeded, failing.status_code) == (False, 503)
    assert [request.headers["X-Service-Event"] for request in receiver.requests] == [
        "webhook.test",
        "webhook.test",
    ]
    listed = await gateway.webhooks.list_deliveries(account, endpoint.id)
    assert listed is not None
    deliveries, total = listed
    assert total == 2
    assert [(item.id, item.status, item.attempts) for item in deliveries] == [
        (failing.delivery_id, "failed", 1),
        (ok.delivery_id, "succeeded", 1),
    ]
    other = await gateway.accounts.create_account("other")
    assert await gateway.webhooks.send_test(other, endpoint.id) is None
    assert await gateway.webhooks.list_deliveries(other, endpoint.id) is None


async def test_an_untrusted_certificate_is_refused(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway(start=False, webhooks_ca_file=None)
    account = await _account(gateway)
    endpoint, secret = await gateway.webhooks.register_endpoint(
        account, receiver.url(), ["order.paid"]
    )
    receiver.trust(secret)
    result = await gateway.webhooks.send_test(account, endpoint.id)
    assert result is not None
    assert (result.succeeded, result.status_code) == (False, None)
    assert "CERTIFICATE_VERIFY_FAILED" in (result.error or "")


async def test_redeliver_sends_the_same_event_again(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway(webhooks_retry_schedule=[0])
    account = await _account(gateway)
    endpoint, secret = await gateway.webhooks.register_endpoint(
        account, receiver.url(), ["order.paid"]
    )
    receiver.trust(secret)
    receiver.script = [Reply(500)]
    async with gateway.database.transaction() as session:
        event_id = await gateway.webhooks.emit(session, account, "order.paid", {"id": 1})
    await receiver.wait_for_requests(1)
    await asyncio.sleep(0.2)
    listed = await gateway.webhooks.list_deliveries(account, endpoint.id)
    assert listed is not None
    assert listed[0][0].status == "dead"
    again = await gateway.webhooks.redeliver(account, endpoint.id, listed[0][0].id)
    assert again is not None
    assert (again.event_id, again.status) == (event_id, "pending")
    await receiver.wait_for(1)
    assert receiver.accepted == [event_id]
    first, second = receiver.requests
    assert first.body == second.body
    assert first.headers["X-Service-Delivery"] != second.headers["X-Service-Delivery"]
    assert await gateway.webhooks.redeliver(account, endpoint.id, "dlv_nope") is None


async def test_deleting_an_endpoint_cancels_its_pending_deliveries(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway(webhooks_retry_schedule=[0, 0.3, 0.3])
    account = await _account(gateway)
    endpoint, secret = await gateway.webhooks.register_endpoint(
        account, receiver.url(), ["order.paid"]
    )
    receiver.trust(secret)
    receiver.script = [Reply(500)]
    async with gateway.database.transaction() as session:
        await gateway.webhooks.emit(session, account, "order.paid", {})
    await receiver.wait_for_requests(1)
    other = await gateway.accounts.create_account("other")
    assert not await gateway.webhooks.delete_endpoint(other, endpoint.id)
    assert await gateway.webhooks.delete_endpoint(account, endpoint.id)
    assert not await gateway.webhooks.delete_endpoint(account, endpoint.id)
    await asyncio.sleep(0.6)
    assert len(receiver.requests) == 1
    assert await gateway.webhooks.list_deliveries(account, endpoint.id) is None


async def test_emitting_an_unregistered_event_is_an_error(
    webhook_gateway: WebhookGateway,
) -> None:
    gateway = await webhook_gateway(start=False)
    account = await _account(gateway)
    async with gateway.database.transaction() as session:
        with pytest.raises(ValueError, match=r"unknown webhook event 'order\.shipped'"):
            await gateway.webhooks.emit(session, account, "order.shipped", {})
    assert "webhook.test" in gateway.registry.events
