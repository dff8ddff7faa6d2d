"""The webhook tables: endpoints, the event outbox and one row per delivery.

``webhook_events`` is the outbox: a product's change and its event are committed in one
transaction, and the event's exact body is stored, so every attempt and every manual
redelivery sends the same bytes. ``webhook_deliveries`` is both the work queue (due
rows are claimed with a lease) and the delivery log customers see.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from tollway.db.base import UTCDateTime, make_metadata, utcnow
from tollway.db.models import Account


class WebhooksBase(DeclarativeBase):
    metadata = make_metadata()


class WebhookEndpoint(WebhooksBase):
    __tablename__ = "webhook_endpoints"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(2048))
    events: Mapped[list[str]] = mapped_column(JSON)
    description: Mapped[str] = mapped_column(String(500), default="")
    # Kept in clear: signing needs the secret itself, a hash would not do.
    secret: Mapped[str] = mapped_column(String(64))
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    disabled_reason: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebhookEvent(WebhooksBase):
    __tablename__ = "webhook_events"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    event: Mapped[str] = mapped_column(String(100))
    body: Mapped[str] = mapped_column(Text)
    """The JSON body exactly as signed and sent: ``{id, event, created_at, data}``."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebhookDelivery(WebhooksBase):
    __tablename__ = "webhook_deliveries"
    # The dispatcher's poll: pending rows in next_attempt_at order.
    __table_args__ = (Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    event_id: Mapped[str] = mapped_column(
        ForeignKey(WebhookEvent.id, ondelete="CASCADE"), index=True
    )
    endpoint_id: Mapped[int] = mapped_column(
        ForeignKey(WebhookEndpoint.id, ondelete="CASCADE"), index=True
    )
    status: Mapped[str] = mapped_column(String(16), default="pending")
    """``pending``, ``succeeded``, ``failed`` (given up early: test event, 410,
    endpoint disabled) or ``dead`` (every scheduled attempt failed)."""
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    """While in the future, one process owns the next attempt; a process that dies
    mid-attempt lets it lapse and another retries."""
    lease_token: Mapped[str | None] = mapped_column(String(32), nullable=True)
    last_status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    last_latency_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
