"""The hosted checkout's API (``/v1/launchpad/checkout``): a plan as a checkout screen
shows it, and the session whose page (:mod:`tollway_launchpad.checkout_page`) a
customer pays on.

Making a session needs the workspace's key and its customer's token (from register
or login, in the body's ``customer_token``): any token this workspace did not issue
for launchpad, an expired one, or one of a customer since deactivated is 401. Only
active plans are sold (another workspace's plan, or an inactive one, is 404), and a
customer who already has a live subscription changes it instead of buying a second
(409). The session keeps the price of the chosen interval as it is now; its page can
be paid until ``expires_at`` (``checkout_session_ttl``) and once.

The success and cancel URLs are where the customer's browser is sent, so they are
checked here (400) as every hosted card page's are
(:func:`tollway.billing.hosted.return_url`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any

import msgspec
from litestar import Request, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import (
    Conflict,
    CurrentCaller,
    Gateway,
    Id,
    PublicOrigin,
    Reads,
    Unauthorized,
    utcnow,
)
from tollway.billing.hosted import Url, id_hash, new_session_id, return_url
from tollway_launchpad.checkout_page import PAGE_DEPENDENCIES, PAGE_ROUTES, CheckoutPage
from tollway_launchpad.models import CheckoutSession
from tollway_launchpad.product import CHECKOUT, CHECKOUT_WRITE, LEDGER, PLANS_READ, PRODUCT
from tollway_launchpad.queries import LaunchpadReads, plan_not_found
from tollway_launchpad.schemas import Interval, PlanRef
from tollway_launchpad.settings import LaunchpadSettings

__all__ = [
    "CHECKOUT_DEPENDENCIES",
    "CHECKOUT_ROUTES",
    "CHECKOUT_SERVICES",
    "PAGE_DEPENDENCIES",
    "PAGE_ROUTES",
]

MAX_TOKEN_LENGTH = 4096
"""Far above any token register or login issues."""


class Prices(msgspec.Struct, frozen=True):
    """A plan's price per billing interval, in minor units."""

    month: int
    year: int


class CheckoutPlan(msgspec.Struct, frozen=True):
    """``GET /v1/launchpad/checkout/{plan_id}``: what a checkout screen shows."""

    plan: PlanRef
    prices: Prices
    currency: str
    trial_days: int
    features: list[str]
    quota: dict[str, int]


class SessionCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/launchpad/checkout/{plan_id}/session``."""

    customer_token: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TOKEN_LENGTH)]
    billing_interval: Interval = "month"
    success_url: Url
    cancel_url: Url


class SessionCreated(msgspec.Struct, frozen=True):
    checkout_url: str
    """The hosted page, ``<gateway's public origin>/checkout/<session id>``."""
    expires_at: datetime


class Checkouts:
    """Checkout screens and sessions (a service: one per gateway)."""

    def __init__(self, gateway: Gateway) -> None:
        settings = gateway.product_settings(LaunchpadSettings)
        self.gateway = gateway
        self.ttl = timedelta(seconds=settings.checkout_session_ttl)
        self.currency = settings.currency
        self.origin = PublicOrigin(gateway.settings.trusted_proxies)

    async def plan(self, reads: Reads, account_id: int, plan_id: int) -> CheckoutPlan:
        """The active plan ``plan_id`` of the workspace, as a checkout screen shows it."""
        plan = await LaunchpadReads(reads, account_id).plan(plan_id)
        if not plan.is_active:
            raise plan_not_found(plan_id)
        return CheckoutPlan(
            PlanRef(plan.id, plan.name, plan.slug),
            Prices(plan.price_monthly_cents, plan.price_annual_cents),
            self.currency,
            plan.trial_days,
            plan.features,
            plan.quota,
        )

    async def open_session(
        self,
        transaction: AsyncSession,
        scope: Any,
        account_id: int,
        plan_id: int,
        data: SessionCreate,
    ) -> SessionCreated:
        """A session of the token's customer buying ``plan_id`` every
        ``data.billing_interval``, in ``transaction``."""
        success_url = return_url(data.success_url, "success_url")
        cancel_url = return_url(data.cancel_url, "cancel_url")
        customer_id = await self._customer(data.customer_token, account_id)
        plan = await self.plan(self.gateway.database.reads, account_id, plan_id)
        book = self.gateway.billing.book(transaction, LEDGER, account_id)
        live = await book.subscription(str(customer_id))
        if live is not None:
            raise Conflict(
                f"Customer {customer_id} already has a subscription ({live.status}); "
                "change or cancel it instead"
            )
        session_id = new_session_id()
        expires_at = utcnow() + self.ttl
        transaction.add(
            CheckoutSession(
                id_hash=id_hash(session_id),
                account_id=account_id,
                customer_id=customer_id,
                plan_id=plan.plan.id,
                billing_interval=data.billing_interval,
                amount_cents=(
                    plan.prices.month if data.billing_interval == "month" else plan.prices.year
                ),
                success_url=success_url,
                cancel_url=cancel_url,
                created_at=utcnow(),
                expires_at=expires_at,
            )
        )
        checkout_url = f"{self.origin.of(scope)}{CHECKOUT.prefix}/{session_id}"
        return SessionCreated(checkout_url, expires_at)

    async def _customer(self, token: str, account_id: int) -> int:
        """The id of the active customer ``token`` signs in; 401 otherwise."""
        tokens = await self.gateway.customer_tokens()
        try:
            customer = tokens.verify(token, account_id=account_id, product=PRODUCT.name)
        except Unauthorized:
            raise _not_a_customer() from None
        reads = LaunchpadReads(self.gateway.database.reads, account_id)
        found = await reads.active_customer(customer.id)
        if found is None:
            raise _not_a_customer()
        return found.id


def _not_a_customer() -> Unauthorized:
    return Unauthorized(
        "customer_token is not a valid token of an active customer of this workspace, "
        "or it has expired: sign the customer in again"
    )


@get("/checkout/{plan_id:int}", scope=PLANS_READ)
async def get_checkout_plan(
    plan_id: Id,
    caller: CurrentCaller,
    reads: NamedDependency[Reads],
    checkouts: NamedDependency[Checkouts],
) -> CheckoutPlan:
    """An active plan's prices, trial, features and quota; 404 for an inactive one."""
    return await checkouts.plan(reads, caller.principal.account_id, plan_id)


@post(
    "/checkout/{plan_id:int}/session",
    scope=CHECKOUT_WRITE,
    status_code=HTTP_200_OK,
    idempotent=True,
)
async def create_checkout_session(
    request: Request[Any, Any, Any],
    plan_id: Id,
    data: JSONBody[SessionCreate],
    caller: CurrentCaller,
    transaction: NamedDependency[AsyncSession],
    checkouts: NamedDependency[Checkouts],
) -> SessionCreated:
    return await checkouts.open_session(
        transaction, request.scope, caller.principal.account_id, plan_id, data
    )


CHECKOUT_ROUTES = [get_checkout_plan, create_checkout_session]
CHECKOUT_DEPENDENCIES: dict[str, Any] = {"checkouts": Checkouts}
CHECKOUT_SERVICES: tuple[type[Any], ...] = (Checkouts, CheckoutPage)
"""Constructed with the gateway, in this order (the page answers with the sessions)."""
