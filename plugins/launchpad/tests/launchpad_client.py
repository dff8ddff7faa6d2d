"""The subscription billing API's test client: a gateway serving launchpad in-process,
the calls its tests repeat, and subscriptions made through the billing engine (as a
paid checkout makes them)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from tollway.billing import CardDetails, Interval, Subscription
from tollway.testing import KeylessProductClient, ProductClientFactory, Tenant
from tollway_launchpad.models import Plan
from tollway_launchpad.product import LEDGER, PRODUCT
from tollway_launchpad.subscriptions import terms

LAUNCHPAD = PRODUCT.prefix
PASSWORD = "correct horse battery"
GOOD_CARD = CardDetails("4242424242424242", 12, 2030, "123")
DECLINING_CARD = CardDetails("4000000000000341", 12, 2030, "123")
"""Saved, but every charge is declined."""
PRO = {
    "name": "Pro",
    "slug": "pro",
    "price_monthly_cents": 2900,
    "price_annual_cents": 29000,
    "features": ["Unlimited projects", "Priority support"],
    "quota": {"users": 10, "storage_gb": 100},
}


@dataclass(frozen=True)
class LaunchpadClient(KeylessProductClient):
    """Accounts ``owner`` (acme) and ``other`` (globex) with keys holding every
    launchpad scope; ``client`` sends no key unless a request does."""

    async def plan(self, by: Tenant | None = None, **fields: Any) -> dict[str, Any]:
        """A new plan: :data:`PRO` with ``fields`` over it."""
        plan: dict[str, Any] = await self.call(
            "POST", "/plans", json={**PRO, **fields}, expect=201, by=by
        )
        return plan

    async def register(
        self, email: str = "ada@example.com", *, by: Tenant | None = None, **fields: Any
    ) -> dict[str, Any]:
        """``{token, customer}`` of a newly registered customer."""
        body = {"email": email, "password": PASSWORD, "full_name": "Ada Lovelace", **fields}
        registered: dict[str, Any] = await self.call(
            "POST", "/customers/register", json=body, expect=201, by=by
        )
        return registered

    async def subscribe(
        self,
        customer_id: int,
        plan_id: int,
        *,
        interval: Interval = "month",
        card: CardDetails = GOOD_CARD,
        by: Tenant | None = None,
        now: datetime | None = None,
    ) -> Subscription:
        """The customer's subscription to the plan, started through the billing engine
        with the plan's trial (as a paid checkout starts it)."""
        account_id = (by or self.owner).account_id
        async with self.gateway.database.transaction() as session:
            plan = await session.scalar(select(Plan).where(Plan.id == plan_id))
            assert plan is not None
            book = self.gateway.billing.book(session, LEDGER, account_id)
            return await book.subscribe(
                str(customer_id),
                terms(plan, interval, trial=True),
                card=card,
                now=now,
            )


def open_launchpad(
    product_client: ProductClientFactory, **options: Any
) -> AbstractAsyncContextManager[LaunchpadClient]:
    """``product_client("launchpad", **options)`` as a :class:`LaunchpadClient`."""
    return LaunchpadClient.open(product_client, PRODUCT.name, **options)
