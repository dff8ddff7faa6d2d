"""Every recorded delivery attempt is counted in ``tollway_webhook_deliveries_total``."""

from __future__ import annotations

import asyncio

from tollway import Gateway
from tollway.webhooks.testing import Reply, WebhookGateway, WebhookTestReceiver


def _outcomes(gateway: Gateway) -> dict[str, float]:
    registry = gateway.metrics.registry
    return {
        outcome: registry.get_sample_value("tollway_webhook_deliveries_total", {"outcome": outcome})
        or 0.0
        for outcome in ("succeeded", "retry", "failed", "dead")
    }


async def _until_counted(gateway: Gateway, expected: dict[str, float]) -> None:
    """Wait for the counts: an outcome is counted just after its row is committed."""
    async with asyncio.timeout(10):
        while True:
            if _outcomes(gateway) == expected:
                return
            await asyncio.sleep(0.05)


async def test_outcomes_are_counted_as_they_are_recorded(
    webhook_gateway: WebhookGateway, receiver: WebhookTestReceiver
) -> None:
    gateway = await webhook_gateway(webhooks_retry_schedule=[0, 0.1])
    account = await gateway.accounts.create_account("acme")
    _, secret = await gateway.webhooks.register_endpoint(
        account, receiver.url(), ["order.created"], "orders"
    )
    receiver.trust(secret)
    receiver.script = [Reply(500), Reply(200), Reply(500), Reply(503), Reply(410)]
    assert _outcomes(gateway) == {"succeeded": 0, "retry": 0, "failed": 0, "dead": 0}

    async def emit() -> None:
        async with gateway.database.transaction() as session:
            await gateway.webhooks.emit(session, account, "order.created", {"n": 1})

    await emit()  # 500, then 200
    await _until_counted(gateway, {"succeeded": 1, "retry": 1, "failed": 0, "dead": 0})
    await emit()  # 500, then 503 on the last attempt of the schedule
    await _until_counted(gateway, {"succeeded": 1, "retry": 2, "failed": 0, "dead": 1})
    await emit()  # 410 Gone
    await _until_counted(gateway, {"succeeded": 1, "retry": 2, "failed": 1, "dead": 1})
