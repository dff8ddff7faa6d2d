"""HTTP handlers of the subscription billing API (``/v1/launchpad``), but checkout's
(:mod:`tollway_launchpad.checkout`).

A reading handler receives ``launchpad_reads``, the caller's workspace read without a
transaction; a writing one receives ``plans``, ``customers`` or ``subscriptions``, the
workspace in the request's transaction, committed once the handler has made its
answer. Another workspace's plan or customer is answered 404, like an unknown one.
``GET /customers/me`` needs the workspace's key and a customer's ``X-Customer-Token``.
Creating requests take an ``Idempotency-Key`` (the kit's ``idempotent=True``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import msgspec
from litestar import Request, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, PathParameter, QueryParameter
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import (
    MAX_ROW_ID,
    Access,
    BadRequest,
    CurrentCaller,
    CurrentCustomer,
    CurrentGateway,
    Reads,
    optional_body_operation,
    optional_json_body,
)
from tollway_launchpad import schemas
from tollway_launchpad.customers import Customers
from tollway_launchpad.product import (
    CUSTOMERS_READ,
    CUSTOMERS_WRITE,
    LEDGER,
    PLANS_READ,
    PLANS_WRITE,
    SUBSCRIPTIONS_READ,
    SUBSCRIPTIONS_WRITE,
)
from tollway_launchpad.queries import LaunchpadReads
from tollway_launchpad.service import Plans
from tollway_launchpad.settings import LaunchpadSettings
from tollway_launchpad.subscriptions import Subscriptions

PlanId = Annotated[int, PathParameter(ge=1, le=MAX_ROW_ID, description="The plan's id.")]
CustomerId = Annotated[int, PathParameter(ge=1, le=MAX_ROW_ID, description="The customer's id.")]
IncludeInactive = Annotated[
    bool, QueryParameter(description="Also list the plans that are not for sale.")
]


def provide_launchpad_reads(reads: NamedDependency[Reads], caller: CurrentCaller) -> LaunchpadReads:
    """The caller's workspace for reading (``launchpad_reads``): no transaction."""
    return LaunchpadReads(reads, caller.principal.account_id)


def provide_plans(transaction: NamedDependency[AsyncSession], caller: CurrentCaller) -> Plans:
    """The caller's workspace's plans in the request's transaction (``plans``)."""
    return Plans(transaction, caller.principal.account_id)


async def provide_customers(
    launchpad_reads: NamedDependency[LaunchpadReads], gateway: CurrentGateway
) -> Customers:
    """The caller's workspace's customers (``customers``)."""
    settings = gateway.product_settings(LaunchpadSettings)
    tokens = await gateway.customer_tokens()
    return Customers(launchpad_reads, gateway.webhooks, tokens, settings.customer_token_ttl)


def provide_subscriptions(
    transaction: NamedDependency[AsyncSession], caller: CurrentCaller, gateway: CurrentGateway
) -> Subscriptions:
    """The caller's workspace's customers' subscriptions in the request's transaction
    (``subscriptions``)."""
    account_id = caller.principal.account_id
    book = gateway.billing.book(transaction, LEDGER, account_id)
    return Subscriptions(transaction, account_id, book)


# Plans --------------------------------------------------------------------------------


@get("/plans", scope=PLANS_READ)
async def list_plans(
    launchpad_reads: NamedDependency[LaunchpadReads], include_inactive: IncludeInactive = False
) -> schemas.PlanList:
    """Ordered by ``sort_order``, then by id; only the plans for sale unless
    ``include_inactive``."""
    return schemas.PlanList(await launchpad_reads.plans(include_inactive=include_inactive))


@get("/plans/{plan_id:int}", scope=PLANS_READ)
async def get_plan(
    plan_id: PlanId, launchpad_reads: NamedDependency[LaunchpadReads]
) -> schemas.Plan:
    return await launchpad_reads.plan(plan_id)


@post("/plans", scope=PLANS_WRITE, idempotent=True)
async def create_plan(
    data: JSONBody[schemas.PlanCreate], plans: NamedDependency[Plans]
) -> schemas.Plan:
    return await plans.create(data)


@patch("/plans/{plan_id:int}", scope=PLANS_WRITE)
async def update_plan(
    plan_id: PlanId, data: JSONBody[schemas.PlanUpdate], plans: NamedDependency[Plans]
) -> schemas.Plan:
    return await plans.update(plan_id, data)


# Customers ----------------------------------------------------------------------------


@post("/customers/register", scope=CUSTOMERS_WRITE, idempotent=True)
async def register_customer(
    data: JSONBody[schemas.CustomerRegister],
    customers: NamedDependency[Customers],
    transaction: NamedDependency[AsyncSession],
) -> schemas.Registration:
    return await customers.register(transaction, data)


@post("/customers/login", scope=CUSTOMERS_WRITE, status_code=200)
async def login_customer(
    data: JSONBody[schemas.CustomerLogin], customers: NamedDependency[Customers]
) -> schemas.SignIn:
    return await customers.login(data)


@get("/customers/me", access=Access(scope=CUSTOMERS_READ, customer=True))
async def current_customer(
    customer: CurrentCustomer,
    customers: NamedDependency[Customers],
    subscriptions: NamedDependency[Subscriptions],
) -> schemas.Me:
    """The customer of the ``X-Customer-Token`` and their live subscription."""
    signed_in = await customers.signed_in(customer.id)
    return schemas.Me(signed_in, await subscriptions.of_customer(signed_in.id))


@get("/customers/{customer_id:int}", scope=CUSTOMERS_READ)
async def get_customer(
    customer_id: CustomerId, launchpad_reads: NamedDependency[LaunchpadReads]
) -> schemas.Customer:
    return await launchpad_reads.customer(customer_id)


# Subscriptions ------------------------------------------------------------------------


@get("/subscriptions/{customer_id:int}", scope=SUBSCRIPTIONS_READ)
async def subscription_status(
    customer_id: CustomerId, subscriptions: NamedDependency[Subscriptions]
) -> schemas.SubscriptionStatus:
    """Never 404 for a customer without a subscription: ``active=false``."""
    return await subscriptions.status(customer_id)


@patch("/subscriptions/{customer_id:int}", scope=SUBSCRIPTIONS_WRITE)
async def change_subscription(
    customer_id: CustomerId,
    data: JSONBody[schemas.SubscriptionChange],
    subscriptions: NamedDependency[Subscriptions],
) -> schemas.SubscriptionStatus:
    if data.plan_id is msgspec.UNSET and data.billing_interval is msgspec.UNSET:
        raise BadRequest("Invalid request body: give plan_id, billing_interval or both")
    return await subscriptions.change(customer_id, data)


@delete(
    "/subscriptions/{customer_id:int}",
    scope=SUBSCRIPTIONS_WRITE,
    status_code=200,
    operation_class=optional_body_operation(schemas.Cancel),
)
async def cancel_subscription(
    request: Request[Any, Any, Any],
    customer_id: CustomerId,
    subscriptions: NamedDependency[Subscriptions],
) -> schemas.Cancellation:
    """At the period's end unless ``immediately``; the body may be left out."""
    options = await optional_json_body(request, schemas.Cancel)
    return await subscriptions.cancel(customer_id, immediately=options.immediately)


ROUTES = [
    list_plans,
    get_plan,
    create_plan,
    update_plan,
    register_customer,
    login_customer,
    current_customer,
    get_customer,
    subscription_status,
    change_subscription,
    cancel_subscription,
]
DEPENDENCIES: dict[str, Callable[..., Any]] = {
    "launchpad_reads": provide_launchpad_reads,
    "plans": provide_plans,
    "customers": provide_customers,
    "subscriptions": provide_subscriptions,
}
