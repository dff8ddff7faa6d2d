"""The webhook engine: what products and the developer API call.

Products emit inside their own transaction (:meth:`WebhookEngine.emit`); customers'
endpoints are managed through the other methods, each scoped to one account (another
account's endpoint is ``None``, never an error that would reveal it exists).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec
from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.db import utcnow
from tollway.db.models import Account
from tollway.errors import ApiError
from tollway.outbox import rowcount
from tollway.webhooks.dispatcher import Dispatcher, DispatchSettings, select_sendable
from tollway.webhooks.envelope import Envelope
from tollway.webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from tollway.webhooks.ssrf import UnsafeURLError, check_url, resolve

if TYPE_CHECKING:
    from tollway.gateway import Gateway

TEST_EVENT = "webhook.test"
MAX_PAGE = 100


class WebhookError(ApiError):
    """A webhook request that breaks a rule; the message is the client's answer, the
    class its status (400 unless a subclass says otherwise)."""

    status_code = 400


class EndpointRefused(WebhookError):
    """An endpoint that cannot be registered as asked:
    ``Cannot register webhook endpoint: <why>``."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Cannot register webhook endpoint: {reason}")


class EndpointAccountNotFound(EndpointRefused):
    """An endpoint registered for an account that does not exist."""

    status_code = 404


class EndpointDisabled(WebhookError):
    """A redelivery to an endpoint disabled after failing deliveries."""

    status_code = 409

    def __init__(self, endpoint_id: int, reason: str | None) -> None:
        super().__init__(
            f"Cannot redeliver: endpoint {endpoint_id} is disabled ({reason}); "
            "register it again to receive events"
        )


@dataclass(frozen=True, slots=True)
class EndpointInfo:
    """An endpoint as listings show it: the secret only by its first 8 characters."""

    id: int
    url: str
    events: tuple[str, ...]
    description: str
    is_active: bool
    disabled_reason: str | None
    created_at: datetime
    secret_prefix: str

    @classmethod
    def of(cls, endpoint: WebhookEndpoint) -> EndpointInfo:
        return cls(
            id=endpoint.id,
            url=endpoint.url,
            events=tuple(endpoint.events),
            description=endpoint.description,
            is_active=endpoint.is_active,
            disabled_reason=endpoint.disabled_reason,
            created_at=endpoint.created_at,
            secret_prefix=endpoint.secret[:8],
        )


@dataclass(frozen=True, slots=True)
class DeliveryInfo:
    """One delivery of an event to an endpoint and its latest attempt.

    ``status``: ``pending`` (waiting for its next attempt), ``succeeded``, ``failed``
    (given up early: a test event's one attempt failed, or the endpoint was disabled)
    or ``dead`` (every scheduled attempt failed; kept as the dead letter).
    """

    id: str
    event_id: str
    event: str
    status: str
    attempts: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    last_latency_ms: int | None
    created_at: datetime
    delivered_at: datetime | None

    @classmethod
    def of(cls, delivery: WebhookDelivery, event: str) -> DeliveryInfo:
        return cls(
            id=delivery.id,
            event_id=delivery.event_id,
            event=event,
            status=delivery.status,
            attempts=delivery.attempts,
            next_attempt_at=delivery.next_attempt_at,
            last_status_code=delivery.last_status_code,
            last_error=delivery.last_error,
            last_latency_ms=delivery.last_latency_ms,
            created_at=delivery.created_at,
            delivered_at=delivery.delivered_at,
        )


@dataclass(frozen=True, slots=True)
class TestResult:
    """What the receiver made of a test event."""

    __test__ = False  # not a pytest test class, despite the name

    delivery_id: str
    status_code: int | None
    latency_ms: int
    error: str | None
    succeeded: bool


def _new_id(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(18)


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(24)


_SUBSCRIBERS = select(WebhookEndpoint.id, WebhookEndpoint.events).where(
    WebhookEndpoint.account_id == bindparam("account_id"), WebhookEndpoint.is_active.is_(True)
)
"""The account's active endpoints and the events each is subscribed to."""


class WebhookEngine:
    """Emits events into the outbox, manages endpoints and runs the dispatcher."""

    def __init__(self, gateway: Gateway) -> None:
        settings = gateway.settings
        self._database = gateway.database
        self._events = gateway.registry.events
        self._allow_private = settings.webhooks_allow_private_addresses
        schedule = tuple(settings.webhooks_retry_schedule)
        if not schedule or min(schedule) < 0:
            raise ValueError("webhooks_retry_schedule must list one or more delays >= 0")
        self._dispatcher = Dispatcher(
            gateway.database,
            gateway.webhook_signer,
            gateway.jobs,
            DispatchSettings(
                schedule=schedule,
                timeout=settings.webhooks_timeout,
                poll_interval=settings.webhooks_poll_interval,
                ca_file=settings.webhooks_ca_file,
                allow_private=self._allow_private,
            ),
            count_outcome=gateway.metrics.count_webhook_outcome,
        )

    @property
    def retry_schedule(self) -> tuple[float, ...]:
        """Seconds before each attempt, counted from the previous one."""
        return self._dispatcher.settings.schedule

    async def start(self) -> None:
        await self._dispatcher.start()

    async def stop(self) -> None:
        await self._dispatcher.stop()

    async def dispatch_due(self) -> int:
        """Claim and enqueue due deliveries now; the loop does this by itself."""
        return await self._dispatcher.dispatch_due()

    # Emitting -------------------------------------------------------------------------

    async def emit(
        self, session: AsyncSession, account_id: int, event: str, data: Mapping[str, Any]
    ) -> str:
        """Record ``event`` for the account's subscribed endpoints in ``session``'s
        transaction; returns the event id (``evt_...``).

        Nothing is sent unless and until that transaction commits; the dispatcher is
        woken right after the commit. Raises ``ValueError`` for an unregistered event
        and ``TypeError`` for data JSON cannot hold: the emitting product's mistakes,
        never its client's, so a request making them answers 500.
        """
        if event not in self._events:
            raise ValueError(f"unknown webhook event {event!r}")
        event_id = _new_id("evt_")
        now = utcnow()
        body = msgspec.json.encode(Envelope(event_id, event, now, dict(data)))
        connection = await session.connection()
        endpoints = await connection.execute(_SUBSCRIBERS, {"account_id": account_id})
        targets = [endpoint_id for endpoint_id, events in endpoints if event in events]
        if not targets:
            # No subscriber, nothing to deliver: the outbox holds deliverable events only.
            return event_id
        session.add(
            WebhookEvent(
                id=event_id, account_id=account_id, event=event, body=body.decode(), created_at=now
            )
        )
        await session.flush()
        first_attempt = now + timedelta(seconds=self.retry_schedule[0])
        session.add_all(
            WebhookDelivery(
                id=_new_id("dlv_"),
                event_id=event_id,
                endpoint_id=endpoint_id,
                status="pending",
                attempts=0,
                next_attempt_at=first_attempt,
                created_at=now,
            )
            for endpoint_id in targets
        )
        self._dispatcher.wake_after_commit(session)
        return event_id

    # Endpoints ------------------------------------------------------------------------

    async def register_endpoint(
        self, account_id: int, url: str, events: Sequence[str], description: str = ""
    ) -> tuple[EndpointInfo, str]:
        """Register an HTTPS endpoint for ``events``; returns it and its signing
        secret, which is never shown again."""
        url = url.strip()
        try:
            target = check_url(url)
            await resolve(target.host, target.port, allow_private=self._allow_private)
        except UnsafeURLError as error:
            raise EndpointRefused(f"invalid webhook URL: {error}") from None
        subscribed = self._check_events(events)
        if len(description) > 500:
            raise EndpointRefused("description is longer than 500 characters")
        secret = new_secret()
        async with self._database.transaction() as session:
            if await session.get(Account, account_id) is None:
                raise EndpointAccountNotFound(f"no account with id {account_id}")
            endpoint = WebhookEndpoint(
                account_id=account_id,
                url=url,
                events=list(subscribed),
                description=description,
                secret=secret,
                is_active=True,
                created_at=utcnow(),
            )
            session.add(endpoint)
            await session.flush()
            return EndpointInfo.of(endpoint), secret

    def _check_events(self, events: Sequence[str]) -> tuple[str, ...]:
        if isinstance(events, str) or not events:
            raise EndpointRefused("events must be a non-empty list of event names")
        duplicates = sorted({name for name in events if events.count(name) > 1})
        if duplicates:
            raise EndpointRefused(f"duplicate event(s): {', '.join(duplicates)}")
        unknown = [name for name in events if name not in self._events]
        if unknown:
            raise EndpointRefused(
                f"unknown event(s): {', '.join(unknown)}; "
                f"known events: {', '.join(sorted(self._events))}"
            )
        return tuple(events)

    async def list_endpoints(
        self, account_id: int, *, offset: int = 0, limit: int = 20
    ) -> tuple[list[EndpointInfo], int]:
        """A page of the account's endpoints, oldest first, and their total."""
        _check_page(offset, limit)
        owned = WebhookEndpoint.account_id == account_id
        async with self._database.sessions() as session:
            total = await session.scalar(select(func.count()).where(owned))
            endpoints = await session.scalars(
                select(WebhookEndpoint)
                .where(owned)
                .order_by(WebhookEndpoint.id)
                .offset(offset)
                .limit(limit)
            )
            return [EndpointInfo.of(endpoint) for endpoint in endpoints], int(total or 0)

    async def delete_endpoint(self, account_id: int, endpoint_id: int) -> bool:
        """Remove an endpoint with its delivery log; pending deliveries are cancelled
        (an attempt already under way finishes, its outcome is dropped)."""
        async with self._database.transaction() as session:
            result = await session.execute(
                delete(WebhookEndpoint).where(
                    WebhookEndpoint.id == endpoint_id, WebhookEndpoint.account_id == account_id
                )
            )
            return rowcount(result) == 1

    async def rotate_secret(self, account_id: int, endpoint_id: int) -> str | None:
        """Replace the endpoint's secret and return the new one (shown once).

        Takes effect at once: pending retries are signed with the new secret (an
        attempt already claimed, due out within seconds, may carry the old one).
        """
        secret = new_secret()
        async with self._database.transaction() as session:
            result = await session.execute(
                update(WebhookEndpoint)
                .where(WebhookEndpoint.id == endpoint_id, WebhookEndpoint.account_id == account_id)
                .values(secret=secret)
            )
            return secret if rowcount(result) == 1 else None

    # Deliveries -----------------------------------------------------------------------

    async def send_test(self, account_id: int, endpoint_id: int) -> TestResult | None:
        """Send a ``webhook.test`` event to the endpoint now, one attempt, recorded as
        a delivery (no retries; a 410 disables the endpoint as any delivery would)."""
        lease_token = secrets.token_hex(16)
        async with self._database.transaction() as session:
            endpoint = await self._owned_endpoint(session, account_id, endpoint_id)
            if endpoint is None:
                return None
            now = utcnow()
            event_id = _new_id("evt_")
            data = {"endpoint_id": endpoint_id, "test": True}
            body = msgspec.json.encode(Envelope(event_id, TEST_EVENT, now, data))
            event = WebhookEvent(
                id=event_id,
                account_id=account_id,
                event=TEST_EVENT,
                body=body.decode(),
                created_at=now,
            )
            session.add(event)
            await session.flush()
            # Leased and never due, so no dispatcher picks it up while we send it.
            lease_until = now + self._dispatcher.settings.lease
            delivery = WebhookDelivery(
                id=_new_id("dlv_"),
                event_id=event_id,
                endpoint_id=endpoint_id,
                status="pending",
                attempts=0,
                next_attempt_at=None,
                lease_until=lease_until,
                lease_token=lease_token,
                created_at=now,
            )
            session.add(delivery)
            await session.flush()
            sendable = select_sendable().where(WebhookDelivery.id == delivery.id)
            send = self._dispatcher.prepare((await session.execute(sendable)).one(), lease_until)
        attempt = await self._dispatcher.attempt(send)
        await self._dispatcher.record(delivery.id, send, attempt, lease_token, retry=False)
        return TestResult(
            delivery_id=delivery.id,
            status_code=attempt.status_code,
            latency_ms=attempt.latency_ms,
            error=attempt.error,
            succeeded=attempt.succeeded,
        )

    async def list_deliveries(
        self, account_id: int, endpoint_id: int, *, offset: int = 0, limit: int = 20
    ) -> tuple[list[DeliveryInfo], int] | None:
        """A page of the endpoint's deliveries, newest first, and their total;
        ``None`` if the endpoint is not the account's."""
        _check_page(offset, limit)
        of_endpoint = WebhookDelivery.endpoint_id == endpoint_id
        async with self._database.sessions() as session:
            if await self._owned_endpoint(session, account_id, endpoint_id) is None:
                return None
            total = await session.scalar(select(func.count()).where(of_endpoint))
            rows = await session.execute(
                select(WebhookDelivery, WebhookEvent.event)
                .join(WebhookEvent, WebhookEvent.id == WebhookDelivery.event_id)
                .where(of_endpoint)
                .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc())
                .offset(offset)
                .limit(limit)
            )
            return [DeliveryInfo.of(delivery, name) for delivery, name in rows], int(total or 0)

    async def redeliver(
        self, account_id: int, endpoint_id: int, delivery_id: str
    ) -> DeliveryInfo | None:
        """Queue a new delivery of the same event (same event id, so receivers still
        deduplicate) to the endpoint, sent within seconds; ``None`` if the endpoint
        or the delivery is not the account's. A disabled endpoint is a 409."""
        async with self._database.transaction() as session:
            endpoint = await self._owned_endpoint(session, account_id, endpoint_id)
            if endpoint is None:
                return None
            original = await session.get(WebhookDelivery, delivery_id)
            if original is None or original.endpoint_id != endpoint_id:
                return None
            if not endpoint.is_active:
                raise EndpointDisabled(endpoint_id, endpoint.disabled_reason)
            now = utcnow()
            delivery = WebhookDelivery(
                id=_new_id("dlv_"),
                event_id=original.event_id,
                endpoint_id=endpoint_id,
                status="pending",
                attempts=0,
                next_attempt_at=now,
                created_at=now,
            )
            session.add(delivery)
            event = await session.scalar(
                select(WebhookEvent.event).where(WebhookEvent.id == original.event_id)
            )
            info = DeliveryInfo.of(delivery, event or "")
        self._dispatcher.wake()
        return info

    async def _owned_endpoint(
        self, session: AsyncSession, account_id: int, endpoint_id: int
    ) -> WebhookEndpoint | None:
        endpoint = await session.get(WebhookEndpoint, endpoint_id)
        if endpoint is None or endpoint.account_id != account_id:
            return None
        return endpoint


def _check_page(offset: int, limit: int) -> None:
    if offset < 0:
        raise WebhookError("offset must not be negative")
    if not 1 <= limit <= MAX_PAGE:
        raise WebhookError(f"limit must be between 1 and {MAX_PAGE}")
