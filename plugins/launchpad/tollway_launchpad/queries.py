"""The subscription billing product's reads: one statement each, rows straight into the
wire's Structs, without a transaction (:class:`tollway.Reads`).

Every query is filtered by the workspace (the caller's account), so another
workspace's plan or customer is simply not found.
"""

from __future__ import annotations

from sqlalchemy import BindParameter, bindparam, select, true

from tollway import MAX_ROW_ID, NotFound, Reads, columns_of
from tollway_launchpad import schemas
from tollway_launchpad.models import Customer, Plan

ACCOUNT: BindParameter[int] = bindparam("account_id")

PLAN_COLUMNS = columns_of(Plan, schemas.Plan)
CUSTOMER_COLUMNS = columns_of(Customer, schemas.Customer)

PLAN = select(*PLAN_COLUMNS).where(Plan.id == bindparam("id"), Plan.account_id == ACCOUNT)
_ORDER = (Plan.sort_order, Plan.id)
ALL_PLANS = select(*PLAN_COLUMNS).where(Plan.account_id == ACCOUNT).order_by(*_ORDER)
ACTIVE_PLANS = (
    select(*PLAN_COLUMNS)
    .where(Plan.account_id == ACCOUNT, Plan.is_active == true())
    .order_by(*_ORDER)
)
CUSTOMER = select(*CUSTOMER_COLUMNS).where(
    Customer.id == bindparam("id"), Customer.account_id == ACCOUNT
)
ACTIVE_CUSTOMER = select(*CUSTOMER_COLUMNS).where(
    Customer.id == bindparam("id"), Customer.account_id == ACCOUNT, Customer.is_active == true()
)
CREDENTIALS = select(Customer.id, Customer.email, Customer.full_name, Customer.password_hash).where(
    Customer.email_key == bindparam("email_key"),
    Customer.account_id == ACCOUNT,
    Customer.is_active == true(),
)


def row_id(reference: str) -> int | None:
    """The row id a reference (a token's subject, the engine's plan) holds, or ``None``."""
    if reference.isascii() and reference.isdigit() and 1 <= int(reference) <= MAX_ROW_ID:
        return int(reference)
    return None


def email_key(email: str) -> str:
    """What uniqueness and sign-in compare: the address without surrounding spaces,
    ignoring case."""
    return email.strip().lower()


def plan_not_found(plan_id: int) -> NotFound:
    return NotFound(f"Plan {plan_id} not found")


def customer_not_found(customer_id: int) -> NotFound:
    return NotFound(f"Customer {customer_id} not found")


class Credentials(schemas.CustomerBrief, frozen=True):
    """A customer signing in: who, and the hash to check the password against."""

    password_hash: str


class LaunchpadReads:
    """One workspace's plans and customers, read without a transaction."""

    def __init__(self, reads: Reads, account_id: int) -> None:
        self.reads = reads
        self.account_id = account_id

    async def plans(self, *, include_inactive: bool) -> list[schemas.Plan]:
        """Ordered by ``sort_order``, then by id (the order they were made in)."""
        statement = ALL_PLANS if include_inactive else ACTIVE_PLANS
        return await self.reads.all(statement, schemas.Plan, account_id=self.account_id)

    async def plan(self, plan_id: int) -> schemas.Plan:
        found = await self.reads.first(PLAN, schemas.Plan, id=plan_id, account_id=self.account_id)
        if found is None:
            raise plan_not_found(plan_id)
        return found

    async def customer(self, customer_id: int) -> schemas.Customer:
        found = await self.reads.first(
            CUSTOMER, schemas.Customer, id=customer_id, account_id=self.account_id
        )
        if found is None:
            raise customer_not_found(customer_id)
        return found

    async def active_customer(self, reference: str) -> schemas.Customer | None:
        """The active customer whose id is ``reference`` (a token's subject), or ``None``."""
        customer_id = row_id(reference)
        if customer_id is None:
            return None
        return await self.reads.first(
            ACTIVE_CUSTOMER, schemas.Customer, id=customer_id, account_id=self.account_id
        )

    async def credentials(self, email: str) -> Credentials | None:
        """The active customer signing in with ``email`` (any case), or ``None``."""
        return await self.reads.first(
            CREDENTIALS, Credentials, email_key=email_key(email), account_id=self.account_id
        )
