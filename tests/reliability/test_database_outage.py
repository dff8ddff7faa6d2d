"""PostgreSQL restarted under a running gateway process: requests during the outage
fail fast with 503 and their request id, service comes back by itself, and nothing is
half written (a conversation and its opening message are there together or not at
all)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy import func, select

from tollway import Gateway, load_settings
from tollway.testing import Backend, GatewayProcess, PostgresServer
from tollway_chat.models import Conversation, Message
from tollway_chat.service import Chat

pytestmark = pytest.mark.slow


@dataclass
class Outcome:
    status: int
    seconds: float
    body: dict[str, object]
    request_id: str | None
    phase: str


async def _prepare(url: str, redis_url: str) -> tuple[Gateway, str, int, int]:
    gateway = Gateway(load_settings(environ={}, plugins=["chat"], database_url=url, demo=False))
    await gateway.migrate()
    account = await gateway.accounts.create_account("acme", {"chat": "business"})
    key = (await gateway.accounts.create_key(account, name="ci", all_scopes=True)).key
    async with gateway.database.transaction() as session:
        inbox = await Chat(session, account, gateway.webhooks).create_inbox("Web", "live_chat")
    return gateway, key, account, inbox


async def test_postgres_restarted_mid_run(backend: Backend, own_postgres: PostgresServer) -> None:
    if backend.redis_url is None:
        pytest.skip("runs once, with the scale-out profile's Redis")
    gateway, key, _, inbox = await _prepare(own_postgres.url, backend.redis_url)
    headers = {"Authorization": f"Bearer {key}"}
    phase = "before"
    outcomes: list[Outcome] = []
    with GatewayProcess(plugins=["chat"], database_url=own_postgres.url) as process:
        async with httpx.AsyncClient(base_url=process.url, headers=headers, timeout=30) as client:
            agent = await client.post("/v1/chat/agents", json={"name": "G", "email": "g@x.example"})
            contact = await client.post("/v1/chat/contacts", json={"name": "A", "email": "a@x.io"})
            assert (agent.status_code, contact.status_code) == (201, 201)
            body = {
                "inbox_id": inbox,
                "contact_id": contact.json()["id"],
                "message": {"content": "Welcome!"},
            }

            async def traffic() -> None:
                while phase != "done":
                    started = time.monotonic()
                    response = await client.post("/v1/chat/conversations", json=body)
                    outcomes.append(
                        Outcome(
                            response.status_code,
                            time.monotonic() - started,
                            response.json(),
                            response.headers.get("x-request-id"),
                            phase,
                        )
                    )
                    await asyncio.sleep(0.01)

            clients = [asyncio.create_task(traffic()) for _ in range(4)]
            await asyncio.sleep(1.5)
            phase = "outage"
            await asyncio.to_thread(own_postgres.stop, "fast")
            await asyncio.sleep(2)
            await asyncio.to_thread(own_postgres.start)
            phase = "after"
            await asyncio.sleep(3)
            phase = "done"
            await asyncio.gather(*clients)

    by_phase = {
        name: Counter(o.status for o in outcomes if o.phase == name)
        for name in ("before", "outage", "after")
    }
    assert set(Counter(o.status for o in outcomes)) <= {201, 503}, by_phase
    assert by_phase["before"][201] > 0, by_phase
    assert by_phase["before"][503] == 0, by_phase
    failed = [o for o in outcomes if o.status == 503]
    assert failed, f"the outage went unnoticed: {by_phase}"
    for outcome in failed:
        assert outcome.seconds < 2.5, outcome  # fast, not a hung connection attempt
        assert outcome.request_id
        assert outcome.body["request_id"] == outcome.request_id
        assert "database" in str(outcome.body["detail"]).lower()
    # Recovered without a restart: the last requests all succeeded.
    tail = [o.status for o in outcomes if o.phase == "after"][-8:]
    assert tail, by_phase
    assert tail == [201] * len(tail), by_phase

    acknowledged = {o.body["id"] for o in outcomes if o.status == 201}
    async with gateway.database.transaction() as session:
        stored = dict(
            (
                await session.execute(
                    select(Conversation.id, func.count(Message.id))
                    .outerjoin(Message, Message.conversation_id == Conversation.id)
                    .group_by(Conversation.id)
                )
            ).all()
        )
    await gateway.database.dispose()
    assert acknowledged <= set(stored)  # nothing acknowledged was lost
    assert set(stored.values()) == {1}  # every conversation has its opening message
