"""The "Save a card" page's test client: a gateway serving the account product
in-process, "Save a card" sessions made through the API, and the page as a browser
uses it (the kit's :class:`~tollway.testing.HostedPageClient`)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from tollway import Gateway
from tollway.billing import TENANT, PaymentMethod
from tollway.billing.hosted import id_hash
from tollway.testing import HostedPageClient, ProductClientFactory, Tenant
from tollway_account.models import CardSession
from tollway_account.product import CARDS, LEDGER, PRODUCT

MASTERCARD = "5555 5555 5555 4444"
RETURN_URL = "https://app.example/settings/billing?saved=1"


@dataclass(frozen=True)
class CardsClient(HostedPageClient):
    """Accounts ``owner`` (acme) and ``other`` (globex) with keys holding every account
    scope; ``client`` sends no key (the page's visitors)."""

    nonce_cookie = "account_cards_csrf"
    pages = CARDS.prefix

    async def setup(self, *, expect: int = 201, by: Tenant | None = None, **body: Any) -> Any:
        """``POST /v1/account/payment-methods/setup``, with ``body`` as JSON if any."""
        sent = {"json": body} if body else {}
        return await self.call("POST", "/payment-methods/setup", expect=expect, by=by, **sent)

    async def page_path(self, *, by: Tenant | None = None, **body: Any) -> str:
        """The path of a new session's page (``by``'s account, the owner's by default)."""
        started = await self.setup(by=by, **body)
        return self.path_of(started["setup_url"])

    async def cards(self, by: Tenant | None = None) -> list[PaymentMethod]:
        """The account's saved cards, as the billing engine has them."""
        return await saved_cards(self.gateway, (by or self.owner).account_id)

    async def session_row(self, path: str) -> CardSession:
        """The stored session of the page at ``path``."""
        async with self.gateway.database.transaction() as session:
            row = await session.get(CardSession, id_hash(path.rsplit("/", 1)[1]))
            assert row is not None
            return row


async def saved_cards(gateway: Gateway, account_id: int) -> list[PaymentMethod]:
    """The account's cards on the platform ledger."""
    async with gateway.database.transaction() as session:
        return await gateway.billing.wallet(session, LEDGER, account_id).cards(TENANT)


def open_cards(
    product_client: ProductClientFactory, **options: Any
) -> AbstractAsyncContextManager[CardsClient]:
    """``product_client("account", **options)`` as a :class:`CardsClient`."""
    return CardsClient.open(product_client, PRODUCT.name, **options)
