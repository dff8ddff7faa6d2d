"""Storing attempts' outcomes: one ``UPDATE`` each, matching only while the attempt's
lease token still holds the delivery, and the outcomes of attempts that end together
committed in one transaction (a commit is what a busy dispatcher waits for most)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Integer, String, Table, bindparam, func, update
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.db import Database, UTCDateTime
from tollway.outbox import rowcount
from tollway.webhooks.models import WebhookDelivery, WebhookEndpoint


@dataclass(frozen=True, slots=True)
class Outcome:
    """An attempt's outcome: the delivery's new column values, stored if ``lease_token``
    still holds it, and the lease released."""

    delivery_id: str
    lease_token: str
    endpoint_id: int
    status: str
    attempts: int
    last_status_code: int | None
    last_error: str | None
    last_latency_ms: int | None
    """``None`` keeps the stored one (no request was made)."""
    next_attempt_at: datetime | None
    delivered_at: datetime | None
    disable_endpoint: str | None = None
    """Why the endpoint is to be disabled with this outcome (a 410 answer)."""


_table = cast(Table, WebhookDelivery.__table__)
_deliveries = _table.c
_STORE = (
    update(_table)
    .where(
        _deliveries.id == bindparam("outcome_of"),
        _deliveries.lease_token == bindparam("held_by"),
    )
    .values(
        status=bindparam("new_status", type_=String()),
        attempts=bindparam("new_attempts", type_=Integer()),
        last_status_code=bindparam("new_status_code", type_=Integer()),
        last_error=bindparam("new_error", type_=String()),
        last_latency_ms=func.coalesce(
            bindparam("new_latency_ms", type_=Integer()), _deliveries.last_latency_ms
        ),
        next_attempt_at=bindparam("new_next_attempt_at", type_=UTCDateTime()),
        delivered_at=bindparam("new_delivered_at", type_=UTCDateTime()),
        lease_until=None,
        lease_token=None,
    )
)
"""One outcome's ``UPDATE``, built once: Core, not the ORM, for the least work per
delivery."""


class OutcomeWriter:
    """Writes outcomes as they come, in one transaction each time: those handed over
    while a transaction is being written go together into the next."""

    def __init__(self, database: Database) -> None:
        self._database = database
        self._waiting: list[tuple[Outcome, asyncio.Future[bool]]] = []
        self._writing: asyncio.Task[None] | None = None

    async def store(self, outcome: Outcome) -> bool:
        """Store ``outcome``; whether the lease still held (if not, it was dropped).
        Raises what the transaction raised, if it failed."""
        stored: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append((outcome, stored))
        if self._writing is None:
            self._writing = asyncio.create_task(self._write_all(), name="tollway-webhook-outcomes")
        return await asyncio.shield(stored)

    async def _write_all(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                try:
                    async with self._database.transaction() as session:
                        results = [await _write(session, outcome) for outcome, _ in batch]
                except Exception as error:
                    for _, stored in batch:
                        stored.set_exception(error)
                else:
                    for (_, stored), result in zip(batch, results, strict=True):
                        stored.set_result(result)
        finally:
            self._writing = None


async def _write(session: AsyncSession, outcome: Outcome) -> bool:
    result = await session.execute(
        _STORE,
        {
            "outcome_of": outcome.delivery_id,
            "held_by": outcome.lease_token,
            "new_status": outcome.status,
            "new_attempts": outcome.attempts,
            "new_status_code": outcome.last_status_code,
            "new_error": outcome.last_error,
            "new_latency_ms": outcome.last_latency_ms,
            "new_next_attempt_at": outcome.next_attempt_at,
            "new_delivered_at": outcome.delivered_at,
        },
    )
    if outcome.disable_endpoint is not None:
        await disable_endpoint(session, outcome.endpoint_id, outcome.disable_endpoint)
    return rowcount(result) == 1


async def disable_endpoint(session: AsyncSession, endpoint_id: int, reason: str) -> None:
    """Stop sending to an endpoint: mark it inactive and give up its pending deliveries
    (leased ones included; their attempt's outcome is then dropped)."""
    await session.execute(
        update(WebhookEndpoint)
        .where(WebhookEndpoint.id == endpoint_id)
        .values(is_active=False, disabled_reason=reason)
    )
    await session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.endpoint_id == endpoint_id, WebhookDelivery.status == "pending")
        .values(
            status="failed",
            next_attempt_at=None,
            lease_until=None,
            lease_token=None,
            last_error=f"endpoint disabled: {reason}",
        )
        .execution_options(synchronize_session=False)
    )
