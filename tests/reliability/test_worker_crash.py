"""A ``tollway worker`` killed (SIGKILL) in the middle of a webhook delivery: another
worker makes the delivery again, every event reaches the receiver at least once, and
its id lets the receiver drop the repeat."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tollway.testing import (
    Backend,
    GatewayFactory,
    GatewayProcess,
    WorkerProcess,
    deployment_settings,
)
from tollway.webhooks.testing import Reply, WebhookTestReceiver

pytestmark = pytest.mark.slow

EVENTS = 12


async def test_deliveries_survive_a_killed_worker(
    backend: Backend,
    gateway_factory: GatewayFactory,
    webhook_receiver: WebhookTestReceiver,
    webhook_certificate: tuple[Path, Path],
) -> None:
    if backend.redis_url is None:
        pytest.skip("workers need the scale-out profile (PostgreSQL and Redis)")
    gateway = await gateway_factory(plugins=["chat", "developer"], isolated=True)
    account = await gateway.accounts.create_account(
        "acme", {"chat": "business", "developer": "standard"}
    )
    key = (await gateway.accounts.create_key(account, name="ci", all_scopes=True)).key
    settings = {
        **deployment_settings(gateway),
        "job_heartbeat": 2,
        "webhooks_allow_private_addresses": "true",
        "webhooks_ca_file": webhook_certificate[0],
        "webhooks_timeout": 60,  # the cut-off attempt must not end by itself
    }
    plugins = ["chat", "developer"]
    with GatewayProcess(plugins=plugins, run_jobs=False, **settings) as server:
        async with httpx.AsyncClient(
            base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as client:
            endpoint = await client.post(
                "/v1/developer/webhooks",
                json={"url": webhook_receiver.url(), "events": ["contact.created"]},
            )
            assert endpoint.status_code == 201, endpoint.text
            webhook_receiver.trust(endpoint.json()["secret"])
            webhook_receiver.script = [Reply(hang=True)]  # the first attempt never returns
            doomed = WorkerProcess(plugins=plugins, **settings).start()
            try:
                for n in range(EVENTS):
                    created = await client.post(
                        "/v1/chat/contacts", json={"name": f"C{n}", "email": f"c{n}@x.example"}
                    )
                    assert created.status_code == 201, created.text
                await webhook_receiver.wait_for_requests(1, within=30)
            finally:
                doomed.kill()  # mid-delivery: no clean-up runs
            with WorkerProcess(plugins=plugins, **settings):
                await webhook_receiver.wait_for(EVENTS, within=60)
                await asyncio.sleep(1)
    accepted = webhook_receiver.accepted
    assert len(set(accepted)) == EVENTS  # every event, at least once
    assert all(event_id.startswith("evt_") for event_id in accepted)
    # The receiver saw the cut-off attempt's event again; its id marks the repeat.
    hung = webhook_receiver.requests[0].event_id
    assert hung in accepted
