"""Sending due deliveries: claim with a lease, POST, record, schedule the retry.

Every gateway process runs one dispatcher loop. It wakes when a transaction that
emitted an event commits, and every ``webhooks_poll_interval`` seconds regardless
(the safety net for events committed by other processes and for retries coming due).
Each pass claims due deliveries with one conditional ``UPDATE`` that only takes rows
whose lease is free, so two processes never both get one attempt, and hands each
claimed delivery to the job queue (job ``webhooks.deliver``).

The job renews the lease before sending, with its own token, so a job that waited in
the queue past its lease sends nothing if another process took the delivery over
meanwhile. A process that dies mid-attempt leaves a lease that lapses; the attempt is
then made again by whichever process polls next: delivery is at least once, and
receivers deduplicate by the body's ``id``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.db import Database, utcnow
from tollway.jobs import JobQueue
from tollway.outbox import LeasedColumns, Poller, claim_due, renew, rowcount
from tollway.webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from tollway.webhooks.schedule import retry_delay
from tollway.webhooks.signing import DELIVERY_HEADER, EVENT_HEADER, WebhookSigner
from tollway.webhooks.transport import Attempt, post

log = logging.getLogger("tollway.webhooks")

DELIVER_JOB = "webhooks.deliver"
BATCH_SIZE = 100
LEASE_MARGIN = 30.0
"""Seconds a lease outlasts the attempt timeout: room for the queue wait and the
database writes around the attempt."""


@dataclass(frozen=True, slots=True)
class DispatchSettings:
    schedule: tuple[float, ...]
    timeout: float
    poll_interval: float
    ca_file: str | None
    allow_private: bool

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=self.timeout + LEASE_MARGIN)


LEASED = LeasedColumns(
    model=WebhookDelivery,
    id=WebhookDelivery.id,
    pending=WebhookDelivery.status == "pending",
    due_at=WebhookDelivery.next_attempt_at,
    lease_until=WebhookDelivery.lease_until,
    lease_token=WebhookDelivery.lease_token,
)


class Dispatcher:
    """The loop that finds due deliveries and the job that makes one attempt."""

    def __init__(
        self,
        database: Database,
        signer: WebhookSigner,
        jobs: JobQueue,
        settings: DispatchSettings,
        *,
        count_outcome: Callable[[str], None] | None = None,
    ) -> None:
        self._database = database
        self._signer = signer
        self._jobs = jobs
        self.settings = settings
        self._count_outcome = count_outcome
        self._poller = Poller(
            "tollway-webhooks-dispatcher",
            self.dispatch_due,
            interval=settings.poll_interval,
            batch=BATCH_SIZE,
        )
        jobs.register(DELIVER_JOB, self.deliver)

    def wake(self) -> None:
        """Look for due deliveries now rather than at the next poll."""
        self._poller.wake()

    def wake_after_commit(self, session: AsyncSession) -> None:
        """Look for due deliveries as soon as ``session``'s transaction commits."""
        self._poller.wake_after_commit(session)

    async def start(self) -> None:
        await self._poller.start()

    async def stop(self) -> None:
        """Stop claiming; attempts already handed to the job queue still run."""
        await self._poller.stop()

    async def dispatch_due(self) -> int:
        """Claim up to a batch of due deliveries and enqueue them; returns how many."""
        token, claimed = await claim_due(
            self._database, LEASED, lease=self.settings.lease, limit=BATCH_SIZE
        )
        for delivery_id in claimed:
            await self._jobs.enqueue(DELIVER_JOB, delivery_id=delivery_id, lease_token=token)
        return len(claimed)

    async def deliver(self, *, delivery_id: str, lease_token: str) -> None:
        """The ``webhooks.deliver`` job: one attempt, if the lease is still ours."""
        async with self._database.transaction() as session:
            if not await renew(session, LEASED, delivery_id, lease_token, self.settings.lease):
                log.info("webhook delivery %s was taken over or finished; skipped", delivery_id)
                return
            delivery, endpoint, event = await load(session, delivery_id)
        if not endpoint.is_active:
            attempt = Attempt(None, f"endpoint is disabled: {endpoint.disabled_reason}", 0)
            await self.record(delivery, attempt, lease_token, retry=False, count=False)
            return
        attempt = await self.attempt(delivery.id, endpoint, event)
        await self.record(delivery, attempt, lease_token, retry=True)

    async def attempt(
        self, delivery_id: str, endpoint: WebhookEndpoint, event: WebhookEvent
    ) -> Attempt:
        """POST the event's stored body, signed with the endpoint's current secret."""
        body = event.body.encode()
        headers = {
            "Content-Type": "application/json",
            self._signer.header: self._signer.sign(endpoint.secret, body),
            EVENT_HEADER: event.event,
            DELIVERY_HEADER: delivery_id,
        }
        return await post(
            endpoint.url,
            body,
            headers,
            time_limit=self.settings.timeout,
            ca_file=self.settings.ca_file,
            allow_private=self.settings.allow_private,
        )

    async def record(
        self,
        delivery: WebhookDelivery,
        attempt: Attempt,
        lease_token: str,
        *,
        retry: bool,
        count: bool = True,
    ) -> WebhookDelivery:
        """Store an attempt's outcome and release the lease; ``retry=False`` gives up
        after this attempt. A 410 answer disables the endpoint. The outcome
        (``succeeded``, ``retry``, ``failed`` or ``dead``) is counted once stored."""
        now = utcnow()
        attempts = delivery.attempts + 1 if count else delivery.attempts
        gone = attempt.status_code == 410
        values: dict[str, Any] = {
            "attempts": attempts,
            "last_status_code": attempt.status_code,
            "last_error": attempt.error
            if attempt.error or attempt.succeeded
            else f"receiver answered HTTP {attempt.status_code}",
            "last_latency_ms": attempt.latency_ms if count else delivery.last_latency_ms,
            **LEASED.released(),
            "next_attempt_at": None,
        }
        delay = retry_delay(self.settings.schedule, attempts, attempt.retry_after)
        if attempt.succeeded:
            values.update(status="succeeded", delivered_at=now)
        elif gone or not retry:
            values["status"] = "failed"
        elif delay is None:
            values["status"] = "dead"
            log.warning("webhook delivery %s is dead after %d attempts", delivery.id, attempts)
        else:
            values.update(status="pending", next_attempt_at=now + timedelta(seconds=delay))
        async with self._database.transaction() as session:
            result = await session.execute(
                update(WebhookDelivery)
                .where(
                    WebhookDelivery.id == delivery.id, WebhookDelivery.lease_token == lease_token
                )
                .values(**values)
                .execution_options(synchronize_session=False)
            )
            stored = rowcount(result) == 1
            if not stored:
                log.warning("lost the lease on webhook delivery %s; outcome dropped", delivery.id)
            if gone:
                await disable_endpoint(
                    session, delivery.endpoint_id, "the receiver answered 410 Gone"
                )
            updated, _, _ = await load(session, delivery.id)
        if stored and self._count_outcome is not None:
            status = values["status"]
            self._count_outcome("retry" if status == "pending" else status)
        return updated


async def load(
    session: AsyncSession, delivery_id: str
) -> tuple[WebhookDelivery, WebhookEndpoint, WebhookEvent]:
    row = (
        await session.execute(
            select(WebhookDelivery, WebhookEndpoint, WebhookEvent)
            .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
            .join(WebhookEvent, WebhookEvent.id == WebhookDelivery.event_id)
            .where(WebhookDelivery.id == delivery_id)
            .execution_options(populate_existing=True)
        )
    ).one()
    return row[0], row[1], row[2]


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
