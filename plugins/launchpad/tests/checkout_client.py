"""The hosted checkout's test client: a gateway serving launchpad in-process, a plan, a
customer and their checkout session, and the page as a browser uses it (the kit's
:class:`~tollway.testing.HostedPageClient`)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from tollway.billing import Subscription
from tollway.testing import HostedPageClient, ProductClientFactory, Tenant
from tollway_launchpad.models import Customer, Plan
from tollway_launchpad.product import CHECKOUT, LEDGER, PRODUCT

SUCCESS_URL = "https://shop.example/welcome?plan=pro"
CANCEL_URL = "https://shop.example/pricing"
PRO = {
    "name": "Pro",
    "slug": "pro",
    "price_monthly_cents": 1900,
    "price_annual_cents": 19000,
    "features": ["Unlimited projects", "Priority support"],
    "quota": {"users": 10, "storage_gb": 100},
}


@dataclass(frozen=True)
class CheckoutClient(HostedPageClient):
    """Accounts ``owner`` (acme) and ``other`` (globex) with keys holding every
    launchpad scope; ``client`` sends no key (the page's visitors)."""

    nonce_cookie = "checkout_csrf"
    pages = CHECKOUT.prefix

    async def plan(self, by: Tenant | None = None, **fields: Any) -> dict[str, Any]:
        """A plan of ``by``'s workspace (the owner's): :data:`PRO` with ``fields``,
        stored as the plans API stores it (that API is tested on its own)."""
        values = {**PRO, **fields}
        async with self.gateway.database.transaction() as session:
            plan = Plan(account_id=(by or self.owner).account_id, **values)
            session.add(plan)
            await session.flush()
            return {"id": plan.id, **values}

    async def customer(self, email: str = "ada@example.com", by: Tenant | None = None) -> Any:
        """``{token, customer: {id}}`` of a new customer of ``by``'s workspace, as
        register answers (the customers API is tested on its own)."""
        account_id = (by or self.owner).account_id
        async with self.gateway.database.transaction() as session:
            customer = Customer(
                account_id=account_id, email=email, email_key=email, password_hash="-"
            )
            session.add(customer)
            await session.flush()
        tokens = await self.gateway.customer_tokens()
        token = tokens.issue(
            account_id=account_id, product=PRODUCT.name, customer_id=str(customer.id)
        )
        return {"token": token, "customer": {"id": customer.id}}

    async def subscription(self, customer_id: int) -> Subscription | None:
        """The customer's live subscription, as the billing engine has it."""
        async with self.gateway.database.transaction() as session:
            book = self.gateway.billing.book(session, LEDGER, self.owner.account_id)
            return await book.subscription(str(customer_id))

    async def open_session(
        self, plan_id: int, token: str, *, expect: int = 200, **fields: Any
    ) -> Any:
        body = {"customer_token": token, "success_url": SUCCESS_URL, "cancel_url": CANCEL_URL}
        return await self.call(
            "POST", f"/checkout/{plan_id}/session", json={**body, **fields}, expect=expect
        )

    async def session_url(self, **plan: Any) -> tuple[str, int]:
        """The path of a new session's page (of ``plan``'s fields over :data:`PRO`),
        and its customer's id."""
        made = await self.plan(**plan)
        registered = await self.customer(f"{made['slug']}@example.com")
        created = await self.open_session(made["id"], registered["token"])
        return self.path_of(created["checkout_url"]), registered["customer"]["id"]


def open_checkout(
    product_client: ProductClientFactory, **options: Any
) -> AbstractAsyncContextManager[CheckoutClient]:
    """``product_client("launchpad", **options)`` as a :class:`CheckoutClient`."""
    return CheckoutClient.open(product_client, PRODUCT.name, **options)
