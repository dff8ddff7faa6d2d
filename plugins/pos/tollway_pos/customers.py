"""A store's customers: registering, signing in, the signed-in customer's profile.

Passwords are argon2id (:func:`tollway.hash_password`). Register and login answer two
tokens from the gateway's :class:`tollway.CustomerTokens`: the customer JWT (audience
``pos``: ``X-Customer-Token`` with the store's key) and the realtime token (audience
``pos-live``: ``?token=`` on the live streams, which an ``EventSource`` can send; it
is never accepted as the other). An email is unique within a store, compared ignoring
case; two stores may each have a customer of the same address, who are two customers.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import msgspec
from sqlalchemy import Table, insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import (
    Conflict,
    Customer,
    CustomerTokens,
    Unauthorized,
    check_sign_in,
    hash_password,
    utcnow,
)
from tollway_pos import schemas
from tollway_pos.catalog import new_id
from tollway_pos.models import Customer as CustomerRow
from tollway_pos.product import LIVE_AUDIENCE, PRODUCT
from tollway_pos.queries import PosReads, email_key
from tollway_pos.settings import PosSettings

CUSTOMERS = cast(Table, CustomerRow.__table__)
INSERT = insert(CUSTOMERS)
WRONG_CREDENTIALS = "Invalid email or password"
"""One answer for an unknown address and a wrong password: it tells no one who is a
customer."""
NOT_SIGNED_IN = "X-Customer-Token is not a valid token for this product"


def _addresses(given: list[schemas.AddressInput]) -> list[dict[str, Any]]:
    """Stored with ids; exactly one default when there are any (the first given as
    default, else the first)."""
    defaults = [index for index, address in enumerate(given) if address.default]
    chosen = defaults[0] if defaults else 0
    return [
        {
            "id": new_id("adr"),
            "label": address.label.strip() or "home",
            "line1": address.line1.strip(),
            "city": address.city.strip(),
            "default": index == chosen,
        }
        for index, address in enumerate(given)
    ]


def _text(value: str | None) -> str | None:
    """Stored without surrounding whitespace; blank is none."""
    return (value.strip() or None) if value is not None else None


class Customers:
    """One store's customers, read from ``reads``; tokens from ``tokens``."""

    def __init__(self, reads: PosReads, tokens: CustomerTokens, settings: PosSettings) -> None:
        self.reads = reads
        self.account_id = reads.account_id
        self.tokens = tokens
        self.settings = settings

    def _issue(self, product: str, customer_id: str, ttl: int) -> tuple[str, datetime]:
        token = self.tokens.issue(
            account_id=self.account_id, product=product, customer_id=customer_id, ttl=ttl
        )
        verified = self.tokens.verify(token, account_id=self.account_id, product=product)
        return token, datetime.fromtimestamp(verified.expires_at, UTC)

    def signed_in(self, customer: schemas.Customer) -> schemas.SignedIn:
        token, expires = self._issue(PRODUCT.name, customer.id, self.settings.customer_token_ttl)
        live, live_expires = self._issue(
            LIVE_AUDIENCE, customer.id, self.settings.realtime_token_ttl
        )
        return schemas.SignedIn(customer, token, expires, live, live_expires)

    async def register(
        self, session: AsyncSession, data: schemas.CustomerRegister
    ) -> schemas.SignedIn:
        """In ``session``'s transaction; 409 when the store has a customer with this
        address (any case)."""
        email = data.email.strip()
        password_hash = await hash_password(data.password)  # before the transaction writes
        customer = schemas.Customer(new_id("cus"), email, _text(data.full_name), 0)
        connection = await session.connection()
        try:
            await connection.execute(
                INSERT,
                {
                    "id": customer.id,
                    "account_id": self.account_id,
                    "email": email,
                    "email_key": email_key(email),
                    "password_hash": password_hash,
                    "full_name": customer.full_name,
                    "phone": _text(data.phone),
                    "loyalty_points": 0,
                    "addresses": _addresses(data.addresses),
                    "created_at": utcnow(),
                },
            )
        except IntegrityError:
            # The insert is the transaction's only write: rolling it back loses nothing.
            raise Conflict(f"A customer with email {email} is already registered") from None
        return self.signed_in(customer)

    async def login(self, data: schemas.CustomerLogin) -> schemas.SignedIn:
        """New tokens for the customer whose address (any case) and password match;
        401 with the same message otherwise."""
        found = await self.reads.credentials(data.email)
        password_hash = None if found is None else found[-1]
        if not await check_sign_in(password_hash, data.password) or found is None:
            raise Unauthorized(WRONG_CREDENTIALS)
        customer_id, email, full_name, points, _ = found
        return self.signed_in(schemas.Customer(customer_id, email, full_name, points))

    async def profile(self, customer: Customer) -> schemas.Profile:
        """The signed-in customer; 401 when the token's customer is gone."""
        found = await self.reads.profile_row(customer.id)
        if found is None:
            raise Unauthorized(NOT_SIGNED_IN)
        customer_id, email, full_name, phone, points, addresses, created_at = found
        return schemas.Profile(
            id=customer_id,
            email=email,
            full_name=full_name,
            phone=phone,
            loyalty_points=points,
            loyalty_tier=self.settings.tier(points).name,
            addresses=msgspec.convert(addresses or [], list[schemas.Address]),
            created_at=created_at,
        )

    def verify_realtime(self, token: str) -> Customer:
        """The customer a realtime token is for, or 401."""
        return self.tokens.verify(token, account_id=self.account_id, product=LIVE_AUDIENCE)
