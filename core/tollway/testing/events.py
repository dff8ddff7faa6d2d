"""What a product emitted: subscribing an account to events without the developer
API, and reading the events recorded in the webhook outbox."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from tollway.db import utcnow
from tollway.gateway import Gateway
from tollway.webhooks.models import WebhookEndpoint, WebhookEvent


async def subscribe(gateway: Gateway, account_id: int, events: Sequence[str]) -> None:
    """An active endpoint of ``account_id`` for ``events``, stored as the developer API
    stores one, minus its URL checks (the address resolves nowhere, and nothing here
    sends: the outbox records an event only for an account with a subscriber)."""
    async with gateway.database.transaction() as session:
        session.add(
            WebhookEndpoint(
                account_id=account_id,
                url="https://hooks.example.invalid/",
                events=list(events),
                description="",
                secret="s" * 64,
                is_active=True,
                created_at=utcnow(),
            )
        )


async def emitted(gateway: Gateway) -> list[tuple[int, str, dict[str, Any]]]:
    """Every event recorded, oldest first: ``(account_id, event, data)``."""
    async with gateway.database.transaction() as session:
        rows = await session.execute(
            select(WebhookEvent.account_id, WebhookEvent.event, WebhookEvent.body).order_by(
                WebhookEvent.created_at
            )
        )
        return [(account, event, json.loads(body)["data"]) for account, event, body in rows]
