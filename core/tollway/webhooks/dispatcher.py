"""Sending due deliveries: claim with a lease, POST, record, schedule the retry.

Every gateway process runs one dispatcher loop. It wakes when a transaction that
emitted an event commits, and every ``webhooks_poll_interval`` seconds regardless
(the safety net for events committed by other processes and for retries coming due).
Each pass is one transaction: a ``SELECT`` reads up to a batch of due deliveries with
their endpoint's URL and secret and their event's body, and one conditional ``UPDATE``
leases those still due (a row another process claimed meanwhile is left out, so two
processes never both get one attempt). Each claimed delivery goes to the job queue (job
``webhooks.deliver``) with what its attempt needs as plain data: URL, body and signed
headers (the secret itself never enters the queue).

A job that starts with time enough left on that lease to finish its attempt within
it sends at once; one that waited longer in the queue first renews the lease with
its token and reloads the delivery, so it sends nothing if another process took the
delivery over meanwhile. The outcome is stored with one ``UPDATE`` that only matches
while the job's token still holds the lease (a taken-over delivery's outcome is
dropped); outcomes of attempts that end together share a transaction
(:class:`~tollway.webhooks.outcomes.OutcomeWriter`). Requests go over kept-alive
connections, one pool per receiving origin
(:class:`~tollway.webhooks.transport.Connections`), closed when the dispatcher stops.

A process that dies mid-attempt leaves a lease that lapses; the attempt is then made
again by whichever process polls next: delivery is at least once, and receivers
deduplicate by the body's ``id``.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import msgspec
from sqlalchemy import Row, Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.db import Database, utcnow
from tollway.jobs import JobQueue
from tollway.outbox import LeasedColumns, Poller, renew, take_leases
from tollway.webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from tollway.webhooks.outcomes import Outcome, OutcomeWriter
from tollway.webhooks.schedule import retry_delay
from tollway.webhooks.signing import DELIVERY_HEADER, EVENT_HEADER, WebhookSigner
from tollway.webhooks.transport import Attempt, Connections

log = logging.getLogger("tollway.webhooks")

DELIVER_JOB = "webhooks.deliver"
BATCH_SIZE = 100
LEASE_MARGIN = 30.0
"""Seconds a lease outlasts the attempt timeout: room for the queue wait and the
database writes around the attempt."""
RECORD_MARGIN = 10.0
"""Seconds of lease a job keeps for recording the outcome: one starting with less than
the timeout plus this left renews the lease before sending."""


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


class Send(msgspec.Struct, frozen=True):
    """One claimed attempt as its job gets it: plain data, so that a queue can carry it
    as JSON."""

    endpoint_id: int
    attempts: int
    """Attempts made before this one."""
    lease_until: float
    """When the claim's lease ends (POSIX seconds)."""
    url: str
    body: str
    headers: dict[str, str]
    disabled: str | None = None
    """Why the endpoint is disabled (then nothing is sent); ``None`` while active."""


def select_sendable() -> Select[*tuple[Any, ...]]:
    """Deliveries with what an attempt needs: one row each, the delivery's id first."""
    return (
        select(
            WebhookDelivery.id,
            WebhookDelivery.endpoint_id,
            WebhookDelivery.attempts,
            WebhookEndpoint.url,
            WebhookEndpoint.secret,
            WebhookEndpoint.is_active,
            WebhookEndpoint.disabled_reason,
            WebhookEvent.event,
            WebhookEvent.body,
        )
        .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
        .join(WebhookEvent, WebhookEvent.id == WebhookDelivery.event_id)
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
        self._outcomes = OutcomeWriter(database)
        self._connections = self._new_connections()
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

    def _new_connections(self) -> Connections:
        return Connections(ca_file=self.settings.ca_file, allow_private=self.settings.allow_private)

    async def start(self) -> None:
        if self._connections.closed:
            self._connections = self._new_connections()
        await self._poller.start()

    async def stop(self) -> None:
        """Stop claiming and close idle connections; attempts already handed to the job
        queue still run (on connections of their own)."""
        await self._poller.stop()
        await self._connections.close()

    async def dispatch_due(self) -> int:
        """Claim up to a batch of due deliveries and enqueue them; returns how many.
        (Also closes the connections of receivers no longer sent to.)"""
        await self._connections.close_idle()
        now = utcnow()
        token = secrets.token_hex(16)
        async with self._database.transaction() as session:
            due = {
                row.id: row
                for row in await session.execute(
                    select_sendable()
                    .where(LEASED.due(now))
                    .order_by(LEASED.due_at, LEASED.id)
                    .limit(BATCH_SIZE)
                )
            }
            leased = await take_leases(
                session,
                LEASED,
                list(due),
                token,
                now=now,
                lease=self.settings.lease,
                returning=[WebhookDelivery.attempts],
            )
        lease_until = now + self.settings.lease
        for delivery_id, attempts in leased:
            send = self.prepare(due[delivery_id], lease_until, attempts=attempts)
            await self._jobs.enqueue(
                DELIVER_JOB,
                delivery_id=delivery_id,
                lease_token=token,
                send=msgspec.to_builtins(send),
            )
        return len(leased)

    def prepare(self, row: Row[Any], lease_until: datetime, *, attempts: int | None = None) -> Send:
        """The attempt for a row of :func:`select_sendable`, signed with the endpoint's current
        secret; ``attempts`` when the row's count may be stale."""
        body = row.body.encode()
        return Send(
            endpoint_id=row.endpoint_id,
            attempts=row.attempts if attempts is None else attempts,
            lease_until=lease_until.timestamp(),
            url=row.url,
            body=row.body,
            headers={
                "Content-Type": "application/json",
                self._signer.header: self._signer.sign(row.secret, body),
                EVENT_HEADER: row.event,
                DELIVERY_HEADER: row.id,
            },
            disabled=None if row.is_active else row.disabled_reason or "no reason recorded",
        )

    async def deliver(
        self, *, delivery_id: str, lease_token: str, send: dict[str, Any] | None = None
    ) -> None:
        """The ``webhooks.deliver`` job: one attempt, if the lease is still ours.

        ``send`` is what the claim loaded; without it (or when too little of the lease
        is left to finish within it) the lease is renewed and the delivery reloaded.
        """
        claimed = None if send is None else msgspec.convert(send, Send)
        room = self.settings.timeout + RECORD_MARGIN
        if claimed is None or time.time() + room > claimed.lease_until:
            claimed = await self._renew(delivery_id, lease_token)
            if claimed is None:
                log.info("webhook delivery %s was taken over or finished; skipped", delivery_id)
                return
        if claimed.disabled is not None:
            attempt = Attempt(None, f"endpoint is disabled: {claimed.disabled}", 0)
            await self.record(delivery_id, claimed, attempt, lease_token, retry=False, count=False)
            return
        attempt = await self.attempt(claimed)
        await self.record(delivery_id, claimed, attempt, lease_token, retry=True)

    async def _renew(self, delivery_id: str, lease_token: str) -> Send | None:
        async with self._database.transaction() as session:
            if not await renew(session, LEASED, delivery_id, lease_token, self.settings.lease):
                return None
            row = (await session.execute(select_sendable().where(LEASED.id == delivery_id))).one()
        return self.prepare(row, utcnow() + self.settings.lease)

    async def attempt(self, send: Send) -> Attempt:
        """POST the event's stored body with its signed headers."""
        return await self._connections.post(
            send.url, send.body.encode(), send.headers, time_limit=self.settings.timeout
        )

    async def record(
        self,
        delivery_id: str,
        send: Send,
        attempt: Attempt,
        lease_token: str,
        *,
        retry: bool,
        count: bool = True,
    ) -> bool:
        """Store an attempt's outcome and release the lease; ``retry=False`` gives up
        after this attempt. A 410 answer disables the endpoint. The outcome
        (``succeeded``, ``retry``, ``failed`` or ``dead``) is counted once stored;
        returns whether it was (not when the lease was lost)."""
        now = utcnow()
        attempts = send.attempts + 1 if count else send.attempts
        gone = attempt.status_code == 410
        delay = retry_delay(self.settings.schedule, attempts, attempt.retry_after)
        next_attempt_at = None
        if attempt.succeeded:
            status = "succeeded"
        elif gone or not retry:
            status = "failed"
        elif delay is None:
            status = "dead"
            log.warning("webhook delivery %s is dead after %d attempts", delivery_id, attempts)
        else:
            status = "pending"
            next_attempt_at = now + timedelta(seconds=delay)
        stored = await self._outcomes.store(
            Outcome(
                delivery_id=delivery_id,
                lease_token=lease_token,
                endpoint_id=send.endpoint_id,
                status=status,
                attempts=attempts,
                last_status_code=attempt.status_code,
                last_error=attempt.error
                if attempt.error or attempt.succeeded
                else f"receiver answered HTTP {attempt.status_code}",
                last_latency_ms=attempt.latency_ms if count else None,
                next_attempt_at=next_attempt_at,
                delivered_at=now if attempt.succeeded else None,
                disable_endpoint="the receiver answered 410 Gone" if gone else None,
            )
        )
        if not stored:
            log.warning("lost the lease on webhook delivery %s; outcome dropped", delivery_id)
        elif self._count_outcome is not None:
            self._count_outcome("retry" if status == "pending" else status)
        return stored
