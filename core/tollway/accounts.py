"""Accounts (tenants), their API keys and product subscriptions.

Used by the CLI, the demo bootstrap and the developer product's key endpoints, so the
rules (unique account names and emails, known products and plans, known scopes and at
least one unless the key is an admin key, key shown once, prefix in listings) live here
once. Product subscriptions are the billing engine's, on the platform's ledger
(:mod:`tollway.billing.platform`): what the pipeline admits by is what the account
pays for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, bindparam, func, select, true, update
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.auth import KeyAuthenticator
from tollway.billing.engine import BillingEngine
from tollway.billing.platform import PLATFORM, TENANT, admitted, latest, terms
from tollway.billing.records import Subscription
from tollway.db import PAGE_LIMIT, PAGE_OFFSET, Database, Paged, count_of, utcnow
from tollway.db.models import Account, ApiKey
from tollway.errors import BadRequest
from tollway.keys import generate_key, hash_key, key_prefix
from tollway.profiles import Profile
from tollway.registry import Plan, Registry


class AccountError(BadRequest):
    """A request about accounts or keys that breaks a rule; the message says which.

    A 400 over HTTP; the command line prints the message on one line (exit 2).
    """


class KeyRefused(AccountError):
    """A key that cannot be created as asked: ``Cannot create API key: <why>``."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Cannot create API key: {reason}")


@dataclass(frozen=True, slots=True)
class CreatedKey:
    """A new key: ``key`` is the only time the full secret is available."""

    id: int
    key: str
    prefix: str
    name: str
    scopes: tuple[str, ...]
    is_admin: bool
    created_at: datetime
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class SubscriptionInfo:
    """An account's newest subscription to one product: ``status`` is the billing
    engine's (``trialing``, ``active``, ``past_due``, ``unpaid``, ``canceled``)."""

    product: str
    plan: str
    status: str
    created_at: datetime
    admitted: bool
    """Whether the account's keys may use the product (see
    :data:`tollway.billing.platform.ADMITTED`)."""


@dataclass(frozen=True, slots=True)
class AccountInfo:
    """An account with its subscriptions, by product."""

    id: int
    name: str
    created_at: datetime
    subscriptions: tuple[SubscriptionInfo, ...]
    email: str | None = None
    full_name: str = ""
    company: str = ""
    tax_id: str | None = None

    @property
    def active_plans(self) -> dict[str, str]:
        """``{product: plan}`` of the subscriptions in effect."""
        return {s.product: s.plan for s in self.subscriptions if s.admitted}


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """A key as listings show it: never the secret, only its prefix."""

    id: int
    account_id: int
    prefix: str
    name: str
    scopes: tuple[str, ...]
    is_admin: bool
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None

    @classmethod
    def of(cls, key: ApiKey) -> KeyInfo:
        return cls(
            id=key.id,
            account_id=key.account_id,
            prefix=key.prefix,
            name=key.name,
            scopes=tuple(key.scopes),
            is_admin=key.is_admin,
            created_at=key.created_at,
            expires_at=key.expires_at,
            revoked_at=key.revoked_at,
            last_used_at=key.last_used_at,
        )


def _unrevoked_key(
    id: int,
    account_id: int,
    prefix: str,
    name: str,
    scopes: list[str],
    is_admin: bool,
    created_at: datetime,
    expires_at: datetime | None,
    last_used_at: datetime | None,
) -> KeyInfo:
    return KeyInfo(
        id=id,
        account_id=account_id,
        prefix=prefix,
        name=name,
        scopes=tuple(scopes),
        is_admin=is_admin,
        created_at=created_at,
        expires_at=expires_at,
        revoked_at=None,
        last_used_at=last_used_at,
    )


_UNREVOKED_KEYS = (ApiKey.account_id == bindparam("account_id"), ApiKey.revoked_at.is_(None))
UNREVOKED_KEY_PAGE = Paged(
    select(
        ApiKey.id,
        ApiKey.account_id,
        ApiKey.prefix,
        ApiKey.name,
        ApiKey.scopes,
        ApiKey.is_admin,
        ApiKey.created_at,
        ApiKey.expires_at,
        ApiKey.last_used_at,
    )
    .where(*_UNREVOKED_KEYS)
    .order_by(ApiKey.id)
    .offset(PAGE_OFFSET)
    .limit(PAGE_LIMIT),
    count_of(ApiKey, *_UNREVOKED_KEYS),
)
ACCOUNT_ID = select(Account.id).where(Account.id == bindparam("account_id"))


class Accounts:
    """Account, key and subscription operations checked against the registry."""

    def __init__(
        self,
        database: Database,
        registry: Registry,
        plans: Mapping[str, Mapping[str, Plan]],
        billing: BillingEngine,
        authenticator: KeyAuthenticator | None = None,
    ) -> None:
        self._database = database
        self._registry = registry
        self._plans = plans
        self._billing = billing
        self._authenticator = authenticator

    def _forget(self, key_id: int | None = None) -> None:
        """Make this process see a change to keys or plans at once (others: within the
        authenticator's cache TTL)."""
        if self._authenticator is not None:
            self._authenticator.forget(key_id)

    async def create_account(
        self,
        name: str,
        subscriptions: Mapping[str, str] | None = None,
        *,
        profile: Profile | None = None,
    ) -> int:
        """Create an account subscribed to ``{product: plan}``; returns its id. Names
        and emails are unique (names checked here, emails by the database too). A new
        account has no card, so only free plans can be given here."""
        name = name.strip()
        if not name:
            raise AccountError("account name must not be empty")
        profile = profile or Profile()
        async with self._database.transaction() as session:
            existing = await session.scalar(select(Account.id).where(Account.name == name))
            if existing is not None:
                raise AccountError(f"an account named {name!r} exists already (id {existing})")
            if profile.email is not None:
                await self._require_free_email(session, profile.email)
            account = Account(
                name=name,
                email=profile.email,
                full_name=profile.full_name,
                company=profile.company,
                tax_id=profile.tax_id,
            )
            session.add(account)
            await session.flush()
            for product, plan in (subscriptions or {}).items():
                await self._subscribe(session, account.id, product, plan)
            return account.id

    async def subscribe(self, account_id: int, product: str, plan: str) -> Subscription:
        """Subscribe the account to ``product`` on ``plan``. A first subscription to a
        paid plan charges its first period to the account's default card now; a change
        of plan is the billing engine's (an upgrade now, prorated; a downgrade at the
        period's end: the result's ``pending`` says so)."""
        async with self._database.transaction() as session:
            await self._require_account(session, account_id)
            subscription = await self._subscribe(session, account_id, product, plan)
        self._forget()
        return subscription

    async def unsubscribe(
        self, account_id: int, product: str, *, at_period_end: bool = False
    ) -> Subscription:
        """Cancel the account's subscription to ``product``: now (its keys lose the
        product at once) or at the end of the period paid for."""
        async with self._database.transaction() as session:
            await self._require_account(session, account_id)
            book = self._billing.book(session, PLATFORM, account_id)
            if await book.subscription(TENANT, product) is None:
                raise AccountError(f"account {account_id} is not subscribed to {product!r}")
            subscription = await book.cancel(TENANT, immediately=not at_period_end, line=product)
        self._forget()
        return subscription

    async def list_accounts(self) -> list[AccountInfo]:
        """Every account, oldest first."""
        return await self._described(true())

    async def account(self, account_id: int) -> AccountInfo:
        described = await self._described(Account.id == account_id)
        if not described:
            raise AccountError(f"no account with id {account_id}")
        return described[0]

    async def create_key(
        self,
        account_id: int,
        *,
        name: str = "default",
        scopes: Iterable[str] = (),
        all_scopes: bool = False,
        admin: bool = False,
        expires_in: timedelta | None = None,
    ) -> CreatedKey:
        """Create a key; unknown scopes are refused, and so is no scope at all unless the
        key is an admin key. The full key is returned once."""
        granted = (
            tuple(sorted(self._registry.scopes)) if all_scopes else tuple(dict.fromkeys(scopes))
        )
        if not granted and not admin:
            raise KeyRefused("a key that is not an admin key needs a scope")
        unknown = [scope for scope in granted if scope not in self._registry.scopes]
        if unknown:
            raise KeyRefused(f"unknown scope(s): {', '.join(unknown)}")
        if expires_in is not None and expires_in <= timedelta(0):
            raise KeyRefused("expiry must be in the future")
        secret = generate_key()
        now = utcnow()
        async with self._database.transaction() as session:
            await self._require_account(session, account_id)
            key = ApiKey(
                account_id=account_id,
                name=name,
                prefix=key_prefix(secret),
                key_hash=hash_key(secret),
                scopes=list(granted),
                is_admin=admin,
                created_at=now,
                expires_at=now + expires_in if expires_in is not None else None,
            )
            session.add(key)
            await session.flush()
            return CreatedKey(
                id=key.id,
                key=secret,
                prefix=key.prefix,
                name=name,
                scopes=granted,
                is_admin=admin,
                created_at=now,
                expires_at=key.expires_at,
            )

    async def list_keys(self, account_id: int) -> list[KeyInfo]:
        """The account's keys, revoked ones included, oldest first."""
        async with self._database.sessions() as session:
            keys = await session.scalars(
                select(ApiKey).where(ApiKey.account_id == account_id).order_by(ApiKey.id)
            )
            listed = [KeyInfo.of(key) for key in keys]
            if not listed:
                await self._require_account(session, account_id)
            return listed

    async def unrevoked_key_page(
        self, account_id: int, *, offset: int, limit: int
    ) -> tuple[list[KeyInfo], int]:
        """A page of the account's unrevoked keys, oldest first, and how many there are,
        read without a transaction. Only an empty page looks for the account."""
        reads = self._database.reads
        keys, total = await reads.page(
            UNREVOKED_KEY_PAGE, _unrevoked_key, account_id=account_id, offset=offset, limit=limit
        )
        if not keys and await reads.scalar(ACCOUNT_ID, account_id=account_id) is None:
            raise AccountError(f"no account with id {account_id}")
        return keys, total

    async def revoke_key(self, key_id: int, *, account_id: int | None = None) -> bool:
        """Revoke a key; ``False`` if no such (unrevoked) key, or not the account's."""
        statement = update(ApiKey).where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
        if account_id is not None:
            statement = statement.where(ApiKey.account_id == account_id)
        async with self._database.transaction() as session:
            result = await session.execute(statement.values(revoked_at=utcnow()))
            revoked = bool(getattr(result, "rowcount", 0))
        self._forget(key_id)
        return revoked

    async def count(self) -> int:
        async with self._database.sessions() as session:
            return int(await session.scalar(select(func.count()).select_from(Account)) or 0)

    async def _described(self, which: ColumnElement[bool]) -> list[AccountInfo]:
        """The accounts ``which`` selects, oldest first, with their subscriptions."""
        async with self._database.sessions() as session:
            accounts = list(
                await session.scalars(select(Account).where(which).order_by(Account.id))
            )
            subscriptions = await latest(session, [account.id for account in accounts])
        return [
            AccountInfo(
                account.id,
                account.name,
                account.created_at,
                tuple(
                    SubscriptionInfo(
                        product,
                        subscription.plan,
                        subscription.status,
                        subscription.created_at,
                        admitted(subscription),
                    )
                    for product, subscription in sorted(subscriptions.get(account.id, {}).items())
                ),
                account.email,
                account.full_name,
                account.company,
                account.tax_id,
            )
            for account in accounts
        ]

    async def _require_account(self, session: AsyncSession, account_id: int) -> None:
        if await session.get(Account, account_id) is None:
            raise AccountError(f"no account with id {account_id}")

    async def _require_free_email(self, session: AsyncSession, email: str) -> None:
        """``email`` as :class:`Profile` keeps it (checked and lowercased)."""
        taken = await session.scalar(select(Account.id).where(Account.email == email))
        if taken is not None:
            raise AccountError(f"an account with the email {email!r} exists already")

    async def _subscribe(
        self, session: AsyncSession, account_id: int, product: str, plan: str
    ) -> Subscription:
        plans = self._plans.get(product)
        if plans is None:
            raise AccountError(f"unknown product {product!r}")
        chosen = plans.get(plan)
        if chosen is None:
            raise AccountError(
                f"product {product!r} has no plan {plan!r} (plans: {', '.join(plans)})"
            )
        book = self._billing.book(session, PLATFORM, account_id)
        if await book.subscription(TENANT, product) is None:
            return await book.subscribe(TENANT, terms(product, chosen), line=product)
        return await book.change(TENANT, terms(product, chosen), line=product)
