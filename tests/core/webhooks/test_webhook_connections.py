"""Kept-alive connections to receivers, and the jobs the dispatcher hands out."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import update

from tollway import Gateway, hookimpl
from tollway.db import utcnow
from tollway.jobs import JobFunction, JobQueue
from tollway.webhooks import TestResult
from tollway.webhooks.models import WebhookDelivery
from tollway.webhooks.testing import Reply, WebhookGateway, WebhookTestReceiver
from tollway.webhooks.transport import MAX_CONNECTIONS_PER_ORIGIN, Connections


async def _endpoint(gateway: Gateway, receiver: WebhookTestReceiver) -> tuple[int, int]:
    account = await gateway.accounts.create_account("acme")
    endpoint, secret = await gateway.webhooks.register_endpoint(
        account, receiver.url(), ["order.created"]
    )
    receiver.trust(secret)
    return account, endpoint.id


async def _send_test(gateway: Gateway, account: int, endpoint: int) -> TestResult:
    result = await gateway.webhooks.send_test(account, endpoint)
    assert result is not None
    return result


async def test_deliveries_to_one_endpoint_share_one_connection(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway()
    account, endpoint = await _endpoint(gateway, receiver)
    for _ in range(20):
        result = await _send_test(gateway, account, endpoint)
        assert result.succeeded, result
    assert len(receiver.accepted) == 20
    assert receiver.connections == 1


async def test_a_burst_uses_a_bounded_number_of_connections(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway()
    account, _ = await _endpoint(gateway, receiver)
    async with gateway.database.transaction() as session:
        events = [
            await gateway.webhooks.emit(session, account, "order.created", {"n": n})
            for n in range(60)
        ]
    await receiver.wait_for(60, within=20)
    assert sorted(receiver.accepted) == sorted(events)
    assert 1 <= receiver.connections <= MAX_CONNECTIONS_PER_ORIGIN


async def test_stopping_the_gateway_closes_its_connections(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway()
    account, endpoint = await _endpoint(gateway, receiver)
    assert (await _send_test(gateway, account, endpoint)).succeeded
    assert receiver.open_connections == 1
    await gateway.stop()
    await receiver.wait_for_no_connections()


async def test_a_connection_the_receiver_closed_is_replaced_without_a_failure(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway()
    account, endpoint = await _endpoint(gateway, receiver)
    assert (await _send_test(gateway, account, endpoint)).succeeded
    # Closed while idle (a restart): noticed before the connection is reused.
    await receiver.stop()
    await receiver.start()
    second = await _send_test(gateway, account, endpoint)
    assert second.succeeded, second
    # Closed just as a request arrives on it: sent again on a new connection.
    receiver.script = [Reply(drop=True)]
    third = await _send_test(gateway, account, endpoint)
    assert third.succeeded, third
    assert len(receiver.requests) == 4
    assert len(receiver.accepted) == 3
    assert receiver.connections == 3


async def test_a_new_connection_closed_without_an_answer_is_a_failed_attempt(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway()
    account, endpoint = await _endpoint(gateway, receiver)
    receiver.script = [Reply(drop=True)]
    result = await _send_test(gateway, account, endpoint)
    assert not result.succeeded
    assert result.status_code is None
    assert result.error
    assert len(receiver.requests) == 1


async def test_pooled_connections_still_refuse_private_addresses(
    receiver: WebhookTestReceiver, webhook_certificate: tuple[Any, Any]
) -> None:
    connections = Connections(ca_file=str(webhook_certificate[0]), allow_private=False)
    try:
        for url in [
            receiver.url(),
            receiver.url(),
            receiver.url().replace("127.0.0.1", "localhost"),
        ]:
            attempt = await connections.post(url, b"{}", {}, time_limit=2)
            assert attempt.status_code is None
            assert "a loopback address" in (attempt.error or "")
    finally:
        await connections.close()
    assert receiver.connections == 0


class RecordingJobs:
    """A job queue that runs nothing by itself: the test runs what it recorded, as a
    queue carrying jobs as JSON would."""

    def __init__(self) -> None:
        self.functions: dict[str, JobFunction] = {}
        self.enqueued: list[str] = []

    def register(self, name: str, function: JobFunction) -> None:
        self.functions[name] = function

    async def enqueue(self, name: str, /, **kwargs: Any) -> None:
        self.enqueued.append(json.dumps({"name": name, "kwargs": kwargs}))

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def taken(self) -> list[dict[str, Any]]:
        jobs, self.enqueued = self.enqueued, []
        return [json.loads(job) for job in jobs]

    async def run(self, job: dict[str, Any]) -> None:
        await self.functions[job["name"]](**job["kwargs"])


class ShopWithRecordedJobs:
    def __init__(self, jobs: RecordingJobs) -> None:
        self.jobs = jobs

    @hookimpl
    def tollway_register_events(self, register: Callable[[str, str], None]) -> None:
        register("order.created", "An order was placed")

    @hookimpl
    def tollway_job_queue(self, gateway: Gateway) -> JobQueue:
        return self.jobs


async def _lapse(gateway: Gateway, job: dict[str, Any]) -> None:
    """Let the job's lease run out, as if it had waited that long in the queue."""
    lapsed = utcnow() - timedelta(seconds=1)
    job["kwargs"]["send"]["lease_until"] = lapsed.timestamp()
    async with gateway.database.transaction() as session:
        await session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id == job["kwargs"]["delivery_id"])
            .values(lease_until=lapsed)
        )


async def test_claimed_jobs_carry_plain_data_and_respect_the_lease(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    base = await webhook_gateway(start=False)
    jobs = RecordingJobs()
    gateway = Gateway(base.settings, extra_plugins=[("shop", ShopWithRecordedJobs(jobs))])
    try:
        account, _ = await _endpoint(gateway, receiver)
        async with gateway.database.transaction() as session:
            for n in range(3):
                await gateway.webhooks.emit(session, account, "order.created", {"n": n})
        assert await gateway.webhooks.dispatch_due() == 3
        fresh, unloaded, overtaken = jobs.taken()
        assert receiver.secret not in json.dumps([fresh, unloaded, overtaken])

        await jobs.run(fresh)  # sent as loaded, no renewal
        del unloaded["kwargs"]["send"]
        await jobs.run(unloaded)  # renews the lease and loads the delivery first
        assert len(receiver.accepted) == 2

        await _lapse(gateway, overtaken)
        assert await gateway.webhooks.dispatch_due() == 1
        [takeover] = jobs.taken()
        await jobs.run(overtaken)  # the lease is another's now: nothing is sent
        assert len(receiver.requests) == 2
        await jobs.run(takeover)
        assert len(receiver.accepted) == 3
        assert receiver.duplicates == 0
    finally:
        await gateway.stop()


async def test_an_outcome_recorded_after_the_lease_was_lost_is_dropped(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    base = await webhook_gateway(start=False)
    jobs = RecordingJobs()
    gateway = Gateway(base.settings, extra_plugins=[("shop", ShopWithRecordedJobs(jobs))])
    try:
        account, endpoint = await _endpoint(gateway, receiver)
        async with gateway.database.transaction() as session:
            await gateway.webhooks.emit(session, account, "order.created", {})
        assert await gateway.webhooks.dispatch_due() == 1
        [job] = jobs.taken()
        async with gateway.database.transaction() as session:
            await session.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == job["kwargs"]["delivery_id"])
                .values(lease_token="another process's token")
            )
        await jobs.run(job)
        assert len(receiver.accepted) == 1
        listed = await gateway.webhooks.list_deliveries(account, endpoint)
        assert listed is not None
        [delivery] = listed[0]
        assert (delivery.status, delivery.attempts) == ("pending", 0)
    finally:
        await gateway.stop()
