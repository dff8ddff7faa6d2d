"""Delivery end to end: a real gateway, a real database, a real HTTPS receiver."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from sqlalchemy import func, select

from tollway import Gateway
from tollway.webhooks import DeliveryInfo, EndpointInfo, sign_payload
from tollway.webhooks.models import WebhookEvent
from tollway.webhooks.testing import Reply, WebhookGateway, WebhookTestReceiver


async def _subscribe(
    gateway: Gateway, receiver: WebhookTestReceiver, events: tuple[str, ...] = ("order.created",)
) -> tuple[int, EndpointInfo]:
    account = await gateway.accounts.create_account("acme")
    endpoint, secret = await gateway.webhooks.register_endpoint(
        account, receiver.url(), list(events), "orders"
    )
    receiver.trust(secret)
    return account, endpoint


async def _emit(gateway: Gateway, account: int, data: dict[str, object] | None = None) -> str:
    async with gateway.database.transaction() as session:
        return await gateway.webhooks.emit(session, account, "order.created", data or {"n": 1})


async def _deliveries(gateway: Gateway, account: int, endpoint: int) -> list[DeliveryInfo]:
    listed = await gateway.webhooks.list_deliveries(account, endpoint, limit=100)
    assert listed is not None
    return listed[0]


async def _until(
    gateway: Gateway,
    account: int,
    endpoint: int,
    done: Callable[[list[DeliveryInfo]], bool],
    within: float = 10.0,
) -> list[DeliveryInfo]:
    """The endpoint's deliveries once ``done(deliveries)``; polls the database."""
    async with asyncio.timeout(within):
        while True:
            deliveries = await _deliveries(gateway, account, endpoint)
            if done(deliveries):
                return deliveries
            await asyncio.sleep(0.05)


async def _settled(
    gateway: Gateway, account: int, endpoint: int, within: float = 10.0
) -> list[DeliveryInfo]:
    """The endpoint's deliveries once one is no longer pending."""
    return await _until(
        gateway,
        account,
        endpoint,
        lambda deliveries: any(item.status != "pending" for item in deliveries),
        within,
    )


async def test_a_committed_event_is_delivered_signed_within_seconds(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway(webhooks_poll_interval=30)  # the commit must wake it
    account, endpoint = await _subscribe(gateway, receiver)
    started = time.monotonic()
    event_id = await _emit(gateway, account, {"order_id": 7, "total": "9.90"})
    await receiver.wait_for(1, within=20)
    # Well before the 30 s poll: the commit woke the dispatcher.
    assert time.monotonic() - started < 20
    [request] = receiver.requests
    assert request.event_id == event_id == receiver.accepted[0]
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["X-Service-Event"] == "order.created"
    assert request.headers["X-Service-Signature"] == sign_payload(receiver.secret, request.body)
    [delivery] = await _settled(gateway, account, endpoint.id)
    assert request.headers["X-Service-Delivery"] == delivery.id
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == (
        "succeeded",
        1,
        200,
    )
    assert delivery.event_id == event_id
    assert delivery.delivered_at is not None
    assert delivery.last_error is None
    assert delivery.last_latency_ms is not None
    assert delivery.next_attempt_at is None


async def test_an_emit_rolled_back_sends_nothing(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway()
    account, endpoint = await _subscribe(gateway, receiver)
    try:
        async with gateway.database.transaction() as session:
            await gateway.webhooks.emit(session, account, "order.created", {"n": 1})
            raise RuntimeError("the product's change failed")
    except RuntimeError:
        pass
    await asyncio.sleep(0.5)  # ten polls
    assert receiver.requests == []
    assert await _deliveries(gateway, account, endpoint.id) == []
    async with gateway.database.sessions() as session:
        assert await session.scalar(select(func.count()).select_from(WebhookEvent)) == 0


async def test_only_subscribed_active_endpoints_of_the_account_get_the_event(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway()
    account, endpoint = await _subscribe(gateway, receiver, ("order.paid",))
    other = await gateway.accounts.create_account("other")
    async with gateway.database.transaction() as session:
        await gateway.webhooks.emit(session, account, "order.created", {})
        await gateway.webhooks.emit(session, other, "order.paid", {})
        paid = await gateway.webhooks.emit(session, account, "order.paid", {})
    await receiver.wait_for(1)
    await asyncio.sleep(0.3)
    assert receiver.accepted == [paid]
    assert len(await _deliveries(gateway, account, endpoint.id)) == 1


async def test_a_receiver_down_for_a_while_gets_each_event_once_when_back(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway(webhooks_retry_schedule=[0, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2])
    account, endpoint = await _subscribe(gateway, receiver)
    await receiver.stop()
    events = [await _emit(gateway, account, {"n": n}) for n in range(3)]
    failed = await _until(
        gateway,
        account,
        endpoint.id,
        lambda deliveries: min(item.attempts for item in deliveries) >= 2,
    )
    assert {item.status for item in failed} == {"pending"}
    assert {item.last_status_code for item in failed} == {None}
    assert all(item.last_error for item in failed)
    await receiver.start()
    await receiver.wait_for(3)
    await asyncio.sleep(0.3)
    assert sorted(receiver.accepted) == sorted(events)
    assert receiver.duplicates == 0
    assert len(receiver.requests) == 3


async def test_server_errors_are_retried_until_success(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway()
    account, endpoint = await _subscribe(gateway, receiver)
    receiver.script = [Reply(500), Reply(502), Reply(200)]
    event_id = await _emit(gateway, account)
    [delivery] = await _settled(gateway, account, endpoint.id)
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == (
        "succeeded",
        3,
        200,
    )
    assert [request.status for request in receiver.requests] == [500, 502, 200]
    assert {request.event_id for request in receiver.requests} == {event_id}
    assert receiver.accepted == [event_id]


async def test_retry_after_postpones_the_next_attempt(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway()
    account, endpoint = await _subscribe(gateway, receiver)
    receiver.script = [Reply(429, (("Retry-After", "1"),)), Reply(200)]
    await _emit(gateway, account)
    await receiver.wait_for(1)
    first, second = receiver.requests
    assert second.at - first.at >= 0.95  # the schedule alone would retry after 0.1 s
    [delivery] = await _settled(gateway, account, endpoint.id)
    assert delivery.attempts == 2


async def test_410_disables_the_endpoint(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway()
    account, endpoint = await _subscribe(gateway, receiver)
    receiver.script = [Reply(410)]
    await _emit(gateway, account)
    [delivery] = await _settled(gateway, account, endpoint.id)
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("failed", 1, 410)
    [listed], _ = await gateway.webhooks.list_endpoints(account)
    assert not listed.is_active
    assert "410" in (listed.disabled_reason or "")
    await _emit(gateway, account)
    await asyncio.sleep(0.3)
    assert len(receiver.requests) == 1
    assert len(await _deliveries(gateway, account, endpoint.id)) == 1


async def test_a_receiver_that_never_answers_times_out(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway(webhooks_timeout=0.5, webhooks_retry_schedule=[0])
    account, endpoint = await _subscribe(gateway, receiver)
    receiver.script = [Reply(hang=True)]
    await _emit(gateway, account)
    [delivery] = await _settled(gateway, account, endpoint.id, within=5)
    assert delivery.status == "dead"
    assert delivery.last_error == "timed out after 0.5 s"
    assert delivery.last_status_code is None
    assert 450 <= (delivery.last_latency_ms or 0) < 1500


async def test_the_last_failed_attempt_dead_letters_the_delivery(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway(webhooks_retry_schedule=[0, 0.1, 0.1])
    account, endpoint = await _subscribe(gateway, receiver)
    receiver.script = [Reply(500)] * 10
    await _emit(gateway, account)
    [delivery] = await _settled(gateway, account, endpoint.id)
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("dead", 3, 500)
    assert delivery.last_error == "receiver answered HTTP 500"
    assert delivery.next_attempt_at is None
    assert delivery.delivered_at is None
    await asyncio.sleep(0.3)
    assert len(receiver.requests) == 3


async def test_a_restarted_gateway_finishes_what_a_stopped_one_left(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    first = await webhook_gateway(webhooks_retry_schedule=[0, 0.3, 0.3])
    account, endpoint = await _subscribe(first, receiver)
    await receiver.stop()
    event_id = await _emit(first, account)
    await _until(first, account, endpoint.id, lambda deliveries: deliveries[0].attempts >= 1)
    await first.stop()
    await receiver.start()
    second = await webhook_gateway(same_database_as=first)
    [delivery] = await _settled(second, account, endpoint.id)
    assert (delivery.status, delivery.attempts) == ("succeeded", 2)
    assert receiver.accepted == [event_id]


async def test_concurrent_emits_are_each_delivered_once(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway()
    account, _ = await _subscribe(gateway, receiver)
    events = await asyncio.gather(*(_emit(gateway, account, {"n": n}) for n in range(50)))
    await receiver.wait_for(50, within=20)
    await asyncio.sleep(0.3)
    assert sorted(receiver.accepted) == sorted(events)
    assert len(receiver.requests) == 50
    assert receiver.duplicates == 0


async def test_two_gateways_on_one_database_never_send_an_attempt_twice(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    first = await webhook_gateway(start=False, webhooks_poll_interval=0.01)
    second = await webhook_gateway(same_database_as=first, start=False)
    account, endpoint = await _subscribe(first, receiver)
    async with first.database.transaction() as session:
        events = [
            await first.webhooks.emit(session, account, "order.created", {"n": n})
            for n in range(40)
        ]
    # Both claim the same due rows at the same moment; together they get each once.
    claimed = await asyncio.gather(*(g.webhooks.dispatch_due() for g in (first, second) * 3))
    assert sum(claimed) == 40
    await first.start()
    await second.start()
    async with first.database.transaction() as session:
        events += [
            await first.webhooks.emit(session, account, "order.created", {"n": n})
            for n in range(40, 80)
        ]
    await receiver.wait_for(80, within=20)
    await asyncio.sleep(0.3)
    assert sorted(receiver.accepted) == sorted(events)
    assert len(receiver.requests) == 80
    assert receiver.duplicates == 0
    deliveries = await _deliveries(first, account, endpoint.id)
    assert {(item.status, item.attempts) for item in deliveries} == {("succeeded", 1)}
