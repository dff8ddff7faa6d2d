"""Customers' subscriptions: the billing engine's, on the ``launchpad`` ledger, shown
with the workspace's plans.

The engine keeps subscriptions, invoices and cards; it knows a plan as ``str(plan.id)``
(its ``plan``) and the plan's slug (its ``plan_name``, what events call ``plan``). What
a subscription gives, its features and quota, is read from the plan when asked, so a
plan's change applies to its subscribers at once; the price stays the one sold.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import Conflict, UnprocessableEntity
from tollway.billing import Book, Subscription, Terms
from tollway_launchpad import schemas
from tollway_launchpad.models import Customer, Plan
from tollway_launchpad.queries import customer_not_found, row_id

NOT_SUBSCRIBED = schemas.SubscriptionStatus(
    active=False,
    status=None,
    subscription_id=None,
    plan=None,
    features=[],
    quota={},
    renews_at=None,
    billing_interval=None,
    amount_cents=None,
    current_period_end=None,
    cancel_at_period_end=False,
    pending_change=None,
)
"""A customer without a live subscription (spec 2.3: never a 404)."""


def price(plan: Plan, interval: schemas.Interval) -> int:
    return plan.price_monthly_cents if interval == "month" else plan.price_annual_cents


def terms(plan: Plan, interval: schemas.Interval, *, trial: bool) -> Terms:
    """What ``plan`` billed every ``interval`` buys; with the plan's trial when the
    customer starts subscribing (``trial``), not when changing plans."""
    return Terms(
        plan=str(plan.id),
        plan_name=plan.slug,
        interval=interval,
        amount_cents=price(plan, interval),
        trial_days=plan.trial_days if trial else 0,
    )


def _ref(plan: Plan | None) -> schemas.PlanRef | None:
    return None if plan is None else schemas.PlanRef(plan.id, plan.name, plan.slug)


class Subscriptions:
    """One workspace's customers' subscriptions in ``session``'s transaction."""

    def __init__(self, session: AsyncSession, account_id: int, book: Book) -> None:
        """``book`` is the workspace's book on the ``launchpad`` ledger in ``session``."""
        self.session = session
        self.account_id = account_id
        self.book = book

    async def _customer(self, customer_id: int) -> str:
        """The engine's reference of the workspace's customer; 404 for another's."""
        found = await self.session.scalar(
            select(Customer.id).where(
                Customer.id == customer_id, Customer.account_id == self.account_id
            )
        )
        if found is None:
            raise customer_not_found(customer_id)
        return str(customer_id)

    async def _plans(self, references: Iterable[str]) -> dict[str, Plan]:
        """The workspace's plans the engine's references name, by reference."""
        ids = {plan_id for reference in references if (plan_id := row_id(reference))}
        if not ids:
            return {}
        rows = await self.session.scalars(
            select(Plan).where(Plan.id.in_(ids), Plan.account_id == self.account_id)
        )
        return {str(plan.id): plan for plan in rows}

    async def plan(self, plan_id: int) -> Plan:
        """The workspace's plan ``plan_id`` named in a request body (422 when unknown)."""
        plan = await self.session.scalar(
            select(Plan).where(Plan.id == plan_id, Plan.account_id == self.account_id)
        )
        if plan is None:
            raise UnprocessableEntity(f"plan_id {plan_id} is not a plan of this workspace")
        return plan

    async def _live(self, customer_id: int) -> Subscription:
        """The workspace's customer's live subscription; 409 without one."""
        customer = await self._customer(customer_id)
        subscription = await self.book.subscription(customer)
        if subscription is None:
            raise Conflict(f"Customer {customer_id} has no live subscription")
        return subscription

    async def status(self, customer_id: int) -> schemas.SubscriptionStatus:
        """Whether the customer has access, to what, until when."""
        subscription = await self.book.subscription(await self._customer(customer_id))
        if subscription is None:
            return NOT_SUBSCRIBED
        return await self._status(subscription)

    async def _status(self, subscription: Subscription) -> schemas.SubscriptionStatus:
        pending = subscription.pending
        references = [subscription.plan, *([pending.plan] if pending is not None else [])]
        plans = await self._plans(references)
        plan = plans.get(subscription.plan)
        pending_plan = plans.get(pending.plan) if pending is not None else None
        return schemas.SubscriptionStatus(
            active=True,
            status=_live_status(subscription),
            subscription_id=subscription.id,
            plan=_ref(plan),
            features=list(plan.features) if plan is not None else [],
            quota=dict(plan.quota) if plan is not None else {},
            renews_at=None
            if subscription.cancel_at_period_end
            else subscription.current_period_end,
            billing_interval=subscription.interval,
            amount_cents=subscription.amount_cents,
            current_period_end=subscription.current_period_end,
            cancel_at_period_end=subscription.cancel_at_period_end,
            pending_change=_pending(subscription, pending_plan),
        )

    async def of_customer(self, customer_id: int) -> schemas.CustomerSubscription | None:
        """The signed-in customer's live subscription, ``None`` without one."""
        subscription = await self.book.subscription(str(customer_id))
        if subscription is None:
            return None
        plan = (await self._plans([subscription.plan])).get(subscription.plan)
        return schemas.CustomerSubscription(
            id=subscription.id,
            status=_live_status(subscription),
            billing_interval=subscription.interval,
            amount_cents=subscription.amount_cents,
            current_period_end=subscription.current_period_end,
            cancel_at_period_end=subscription.cancel_at_period_end,
            plan_name=plan.name if plan is not None else subscription.plan_name,
            features=list(plan.features) if plan is not None else [],
            quota=dict(plan.quota) if plan is not None else {},
        )

    async def cancel(self, customer_id: int, *, immediately: bool) -> schemas.Cancellation:
        """Now (access ends now) or at the period's end (access until then); 409
        without a live subscription."""
        customer = await self._customer(customer_id)
        canceled = await self.book.cancel(customer, immediately=immediately)
        ends = canceled.canceled_at if canceled.status == "canceled" else None
        return schemas.Cancellation(
            subscription_id=canceled.id,
            status="canceled" if canceled.status == "canceled" else _live_status(canceled),
            cancel_at_period_end=canceled.cancel_at_period_end,
            canceled_at=canceled.canceled_at,
            current_period_end=canceled.current_period_end,
            access_ends_at=ends or canceled.current_period_end,
        )

    async def change(
        self, customer_id: int, data: schemas.SubscriptionChange
    ) -> schemas.SubscriptionStatus:
        """Another plan and/or billing interval (the engine decides when: an upgrade
        now, prorated; anything else at the period's end); 409 without a live
        subscription, 422 for a plan the workspace does not sell."""
        current = await self._live(customer_id)
        plan_id = row_id(current.plan) if data.plan_id is msgspec.UNSET else data.plan_id
        if plan_id is None:
            raise Conflict(f"Customer {customer_id}'s subscription is on no plan of this workspace")
        plan = await self.plan(plan_id)
        if not plan.is_active and str(plan.id) != current.plan:
            raise UnprocessableEntity(f"plan_id {plan_id} is not active: it is not for sale")
        interval = (
            current.interval if data.billing_interval is msgspec.UNSET else data.billing_interval
        )
        changed = await self.book.change(str(customer_id), terms(plan, interval, trial=False))
        return await self._status(changed)


def _pending(subscription: Subscription, plan: Plan | None) -> schemas.PendingChange | None:
    """The change waiting for the period's end, if any (and its plan is the workspace's)."""
    pending = subscription.pending
    if pending is None or plan is None:
        return None
    return schemas.PendingChange(
        plan=schemas.PlanRef(plan.id, plan.name, plan.slug),
        billing_interval=pending.interval,
        amount_cents=pending.amount_cents,
        effective_at=subscription.current_period_end,
    )


def _live_status(subscription: Subscription) -> schemas.LiveStatus:
    """The status of a subscription the engine answered as live."""
    status = subscription.status
    assert status != "canceled", f"subscription {subscription.id} is not live"
    # launchpad's ledger cancels after the last failed retry: never ``unpaid``.
    assert status != "unpaid", f"subscription {subscription.id} is unpaid"
    return status
