"""A workspace's customers: registering, signing in, and the signed-in customer.

Passwords are argon2id (:func:`tollway.hash_password`); a customer signs in with a
token the gateway's :class:`tollway.CustomerTokens` issues for this product and this
workspace, sent as ``X-Customer-Token`` with the workspace's key. An email is unique
within a workspace, compared ignoring case; two workspaces may have a customer of the
same address, who are two customers.
"""

from __future__ import annotations

from typing import cast

import msgspec
from sqlalchemy import Table, insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import (
    Conflict,
    CustomerTokens,
    Unauthorized,
    WebhookEngine,
    check_sign_in,
    hash_password,
    utcnow,
)
from tollway_launchpad import schemas
from tollway_launchpad.models import Customer
from tollway_launchpad.product import CUSTOMER_CREATED, PRODUCT
from tollway_launchpad.queries import CUSTOMER_COLUMNS, LaunchpadReads, email_key

CUSTOMERS = cast(Table, Customer.__table__)
INSERT = insert(CUSTOMERS).returning(*CUSTOMER_COLUMNS)
WRONG_CREDENTIALS = "Invalid email or password"
"""One answer for an unknown address and a wrong password: it tells no one who is a
customer."""
NOT_SIGNED_IN = "X-Customer-Token is not a valid token for this product"


def _full_name(value: str | None) -> str | None:
    """Stored without surrounding whitespace; blank is no name."""
    return (value.strip() or None) if value is not None else None


class Customers:
    """One workspace's customers, read from ``reads``; tokens from ``tokens``, valid
    ``token_ttl`` seconds."""

    def __init__(
        self,
        reads: LaunchpadReads,
        webhooks: WebhookEngine,
        tokens: CustomerTokens,
        token_ttl: int,
    ) -> None:
        self.reads = reads
        self.account_id = reads.account_id
        self.webhooks = webhooks
        self.tokens = tokens
        self.token_ttl = token_ttl

    def _token(self, customer_id: int) -> str:
        return self.tokens.issue(
            account_id=self.account_id,
            product=PRODUCT.name,
            customer_id=str(customer_id),
            ttl=self.token_ttl,
        )

    async def register(
        self, session: AsyncSession, data: schemas.CustomerRegister
    ) -> schemas.Registration:
        """In ``session``'s transaction; 409 when the workspace has a customer with this
        address (any case); emits ``customer.created``."""
        email = data.email.strip()  # (a schema's ``$`` lets one trailing newline through)
        password_hash = await hash_password(data.password)  # before the transaction writes
        connection = await session.connection()
        try:
            [row] = await connection.execute(
                INSERT,
                {
                    "account_id": self.account_id,
                    "email": email,
                    "email_key": email_key(email),
                    "password_hash": password_hash,
                    "full_name": _full_name(data.full_name),
                    "is_active": True,
                    "created_at": utcnow(),
                },
            )
        except IntegrityError:
            # The insert is the transaction's only write: rolling it back loses nothing.
            raise Conflict(f"A customer with email {email} is already registered") from None
        customer = schemas.Customer(*row)
        await self.webhooks.emit(
            session, self.account_id, CUSTOMER_CREATED, msgspec.to_builtins(customer)
        )
        return schemas.Registration(self._token(customer.id), customer)

    async def login(self, data: schemas.CustomerLogin) -> schemas.SignIn:
        """A new token for the customer whose address (any case) and password match;
        401 with the same message otherwise."""
        found = await self.reads.credentials(data.email)
        password_hash = None if found is None else found.password_hash
        if not await check_sign_in(password_hash, data.password) or found is None:
            raise Unauthorized(WRONG_CREDENTIALS)
        brief = schemas.CustomerBrief(found.id, found.email, found.full_name)
        return schemas.SignIn(self._token(found.id), brief)

    async def signed_in(self, customer_id: str) -> schemas.CustomerBrief:
        """The customer a verified token names; 401 when it no longer signs anyone in
        (the customer is gone or deactivated)."""
        customer = await self.reads.active_customer(customer_id)
        if customer is None:
            raise Unauthorized(NOT_SIGNED_IN)
        return schemas.CustomerBrief(customer.id, customer.email, customer.full_name)
