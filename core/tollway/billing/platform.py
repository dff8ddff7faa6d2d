"""The platform billing its tenants: each account's product subscriptions are
subscriptions on the billing engine's ``platform`` ledger, one line per product, and
the pipeline admits an account to a product by them.

Every product subscription lives here, free ones too, so one record answers both
"may this key use chat?" and "what does this account pay for chat?": a free plan is a
subscription of 0 that renews without an invoice, a paid one is charged to the
account's default card (``tollway.billing.Wallet`` on this ledger, customer
:data:`TENANT`). The gateway's admission reads :data:`ADMITTED` subscriptions:
trialing, active and past due (service goes on while the dunning retries last);
after the last failed retry the subscription is ``unpaid`` and the product refused
until the invoice is paid or the period ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import Select, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.billing.models import BillingSubscription
from tollway.billing.records import (
    Ledger,
    Status,
    Subscription,
    Terms,
    subscription_record,
)
from tollway.registry import Plan
from tollway.settings import Settings

PLATFORM = "platform"
"""The ledger of the platform's own billing."""
TENANT = ""
"""The engine's customer on :data:`PLATFORM`: the account itself."""
ADMITTED: tuple[Status, ...] = ("trialing", "active", "past_due")
"""Subscriptions whose service goes on: past due too, while its retries last."""

ADMITTED_PLANS: Select[str, str] = select(BillingSubscription.line, BillingSubscription.plan).where(
    BillingSubscription.ledger == PLATFORM,
    BillingSubscription.account_id == bindparam("account_id"),
    BillingSubscription.customer == TENANT,
    BillingSubscription.status.in_(ADMITTED),
)
"""``(product, plan)`` of every subscription an account's keys are admitted by."""


def platform_ledger(settings: Settings) -> Ledger:
    """The ledger of the deployment's settings: one invoice series for the whole
    deployment, unpaid (not canceled) after the last retry, no webhook events (a
    tenant reads its invoices through the account API)."""
    return Ledger(
        name=PLATFORM,
        currency=settings.billing_currency,
        retry_days=tuple(settings.billing_retry_days),
        events=False,
        numbering="deployment",
        exhausted="unpaid",
    )


def terms(product: str, plan: Plan) -> Terms:
    """What a subscription to ``product`` on ``plan`` costs: invoices say
    ``chat pro (monthly)``."""
    return Terms(
        plan=plan.name,
        plan_name=f"{product} {plan.name}",
        interval=plan.interval,
        amount_cents=plan.price_cents,
    )


async def latest(
    session: AsyncSession, account_ids: list[int] | None = None
) -> Mapping[int, dict[str, Subscription]]:
    """Each account's newest subscription per product (live or not), by account and
    product; every account's when ``account_ids`` is ``None``."""
    query = select(BillingSubscription).where(
        BillingSubscription.ledger == PLATFORM, BillingSubscription.customer == TENANT
    )
    if account_ids is not None:
        query = query.where(BillingSubscription.account_id.in_(account_ids))
    found: dict[int, dict[str, Subscription]] = {}
    for row in await session.scalars(query.order_by(BillingSubscription.id)):
        found.setdefault(row.account_id, {})[row.line] = subscription_record(row)
    return found


def admitted(subscription: Subscription) -> bool:
    return subscription.status in ADMITTED


def scheduled(subscription: Subscription, plan: str) -> datetime | None:
    """When a change to ``plan`` takes over, if it waits for the period's end."""
    pending = subscription.pending
    if pending is not None and pending.plan == plan:
        return subscription.current_period_end
    return None
