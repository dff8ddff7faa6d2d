"""The account API's test client: a gateway serving the account product in-process,
saved cards put on the platform's ledger as the "Save a card" page puts them, the
operator's subscription moves (``gateway.accounts``), the billing run, the key cache's
clock and the ``tollway`` command in a process of its own."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from tollway import DatabaseKeyAuthenticator, Gateway, KeyAuthenticator, hookimpl
from tollway.billing import TENANT, CardDetails, PaymentMethod, RunReport, Subscription
from tollway.testing import (
    KeylessProductClient,
    ProductClientFactory,
    Tenant,
    deployment_settings,
)
from tollway_account.product import LEDGER, PRODUCT
from tollway_chat.product import CONVERSATIONS_READ

ACCOUNT = PRODUCT.prefix
GOOD_CARD = CardDetails("4242424242424242", 12, 2030, "123")
DECLINING_CARD = CardDetails("4000000000000341", 12, 2030, "123")
"""Saved, but every charge is declined."""
CHAT_PRO = 2900
PRICED = {
    "chat": {"plans": {"pro": {"price_cents": CHAT_PRO}, "business": {"price_cents": 9900}}},
    "code": {"plans": {"pro": {"price_cents": 120_000, "interval": "year"}}},
}
"""Plan prices as an operator configures them."""
CONVERSATIONS = "/v1/chat/conversations"
NOT_ADMITTED = "No active subscription to the 'chat' product"
TOLLWAY = shutil.which("tollway") or str(Path(sys.executable).with_name("tollway"))


class KeyCacheClock:
    """The clock of the served gateway's key cache (monotonic seconds, standing still
    unless a test moves it): a key's answer stays cached until :meth:`AccountClient.
    ttl_passes`. So what the serving process is told of (``forget``) shows at once,
    and a change made elsewhere (another process, a billing run) only once the test
    lets ``key_cache_ttl`` pass: never by luck of timing."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    @hookimpl
    def tollway_key_authenticator(self, gateway: Gateway) -> KeyAuthenticator:
        ttl = gateway.settings.key_cache_ttl
        return DatabaseKeyAuthenticator(gateway.database, ttl=ttl, clock=self)


@dataclass(frozen=True)
class AccountClient(KeylessProductClient):
    """Accounts ``owner`` (acme) and ``other`` (globex) with keys holding every
    account scope; ``client`` sends no key unless a request does."""

    clock: KeyCacheClock = field(default_factory=KeyCacheClock)

    async def save_card(
        self, card: CardDetails = GOOD_CARD, *, by: Tenant | None = None, default: bool = True
    ) -> PaymentMethod:
        """A card saved on the account's wallet, as the "Save a card" page saves it."""
        account_id = (by or self.owner).account_id
        async with self.gateway.database.transaction() as session:
            wallet = self.gateway.billing.wallet(session, LEDGER, account_id)
            return await wallet.add(TENANT, card, default=default)

    async def subscribe(self, product: str, plan: str, *, by: Tenant | None = None) -> Subscription:
        """The operator's ``tollway accounts subscribe``."""
        return await self.gateway.accounts.subscribe((by or self.owner).account_id, product, plan)

    async def unsubscribe(self, product: str, *, by: Tenant | None = None) -> Subscription:
        """The operator's ``tollway accounts unsubscribe`` (now)."""
        return await self.gateway.accounts.unsubscribe((by or self.owner).account_id, product)

    async def run(self, as_of: datetime) -> RunReport:
        """``tollway billing run --as-of``, in this process."""
        return await self.gateway.billing.run_due(as_of)

    def ttl_passes(self) -> None:
        """``key_cache_ttl`` passes for the served gateway's key cache."""
        self.clock.now += self.gateway.settings.key_cache_ttl

    async def key(self, *scopes: str, by: Tenant | None = None) -> Tenant:
        """Another key of the account (the owner's by default) holding ``scopes``."""
        account_id = (by or self.owner).account_id
        created = await self.gateway.accounts.create_key(account_id, name="more", scopes=scopes)
        return Tenant(account_id, created.id, created.key)

    async def chat_key(self, by: Tenant | None = None) -> Tenant:
        """A key of the account that may list chat conversations."""
        return await self.key(CONVERSATIONS_READ, by=by)

    async def list_conversations(self, key: Tenant) -> httpx.Response:
        """A chat request: admitted or refused by the account's chat subscription."""
        return await self.client.get(CONVERSATIONS, headers=key.headers)

    async def subscription(self, product: str, *, by: Tenant | None = None) -> Any:
        """The account's subscription to ``product`` as ``GET /subscriptions`` shows
        it, ``None`` when it lists none."""
        listed = (await self.call("GET", "/subscriptions", by=by))["subscriptions"]
        found = [item for item in listed if item["product"] == product]
        assert len(found) <= 1, listed
        return found[0] if found else None

    async def invoices(self, *, by: Tenant | None = None, **params: Any) -> Any:
        """``GET /invoices`` (``params`` as its query) for its list."""
        return (await self.call("GET", "/invoices", by=by, params=params))["invoices"]


@asynccontextmanager
async def account_client(
    product_client: ProductClientFactory, **settings: Any
) -> AsyncIterator[AccountClient]:
    """The account product with chat and code beside it, their paid plans priced; its
    key cache on a :class:`KeyCacheClock`. ``settings`` go to ``product_client``."""
    products = {**PRICED, **settings.pop("products", {})}
    clock = KeyCacheClock()
    async with product_client(
        PRODUCT.name,
        plan="standard",
        plugins=[PRODUCT.name, "chat", "code"],
        products=products,
        extra_plugins=[("key-cache-clock", clock)],
        **settings,
    ) as serving:
        yield AccountClient(serving, clock)


@dataclass(frozen=True)
class Command:
    """What a ``tollway`` command did."""

    status: int
    stdout: str
    stderr: str


async def tollway(gateway: Gateway, *args: str) -> Command:
    """``tollway ARGS`` as an operator runs it, in a process of its own, on
    ``gateway``'s deployment: its database and plugins, not the plan prices of
    :data:`PRICED` (a paid plan is free to the command).

    Awaited, not waited for: this process's gateway goes on meanwhile (its billing
    clock writes to the same database), and an event loop blocked mid-transaction
    would hold SQLite's write lock against the command."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")}
    joined = {**deployment_settings(gateway), "plugins": ",".join(gateway.settings.plugins or ())}
    env.update({f"TOLLWAY_{name.upper()}": str(value) for name, value in joined.items()})
    process = await asyncio.create_subprocess_exec(
        TOLLWAY,
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return Command(process.returncode, out.decode(), err.decode())
