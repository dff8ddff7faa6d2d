"""End customers of a tenant: argon2id passwords and the tokens they sign in with.

Products whose tenants have customers of their own (a shop's buyers at the point of
sale, a workspace's subscribers in billing) keep the customers' rows in their own
tables and build on this one implementation: :func:`hash_password` /
:func:`verify_password` (argon2id, off the event loop), and :class:`CustomerTokens`,
HS256 JWTs with an expiry, an audience per product and the algorithm pinned, so a
token issued for one product, one tenant or with another algorithm is refused.

A route declaring ``Access(..., customer=True)`` needs the tenant's API key *and* an
``X-Customer-Token`` the key's account issued for that product; the handler receives
the :class:`Customer` (``customer: CurrentCustomer``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import jwt
import msgspec
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from litestar.di import NamedDependency

from tollway.errors import Unauthorized

ALGORITHM = "HS256"
HEADER = "X-Customer-Token"
DEFAULT_TTL = 3600
"""Seconds a customer token is valid unless the product asks otherwise."""

_hasher = PasswordHasher()  # argon2id, the library's (RFC 9106) default parameters


async def hash_password(password: str) -> str:
    """The argon2id hash of ``password`` (an encoded string with its salt and
    parameters), computed on a worker thread: it takes tens of milliseconds."""
    return await asyncio.to_thread(_hasher.hash, password)


async def verify_password(password_hash: str, password: str) -> bool:
    """Whether ``password`` matches ``password_hash``; a malformed hash never does."""
    try:
        return await asyncio.to_thread(_hasher.verify, password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


class _Decoy:
    """A hash to check passwords against when no customer has the address."""

    def __init__(self) -> None:
        self._hash: str | None = None

    async def hash(self) -> str:
        if self._hash is None:
            # Two first sign-ins may both make one; either will do.
            self._hash = await hash_password("no customer has this password")
        return self._hash


_DECOY = _Decoy()


async def check_sign_in(password_hash: str | None, password: str) -> bool:
    """Whether a customer signs in with ``password``: ``password_hash`` is theirs, or
    ``None`` when no customer has the address given. Then a decoy hash is checked all
    the same, so an unknown address takes as long to refuse as a wrong password, and
    the time of an answer tells no one who is a customer."""
    if password_hash is None:
        await verify_password(await _DECOY.hash(), password)
        return False
    return await verify_password(password_hash, password)


class Customer(msgspec.Struct, frozen=True):
    """An end customer a token was verified for."""

    id: str
    """The product's own id of the customer (the token's ``sub``)."""
    account_id: int
    """The tenant whose customer this is."""
    product: str
    expires_at: int


CurrentCustomer = NamedDependency[Customer]
"""Annotate a handler parameter named ``customer`` with this to receive the customer."""


class CustomerTokens:
    """Issues and verifies customer tokens with the deployment's secret."""

    def __init__(self, secret: str) -> None:
        if len(secret) < 32:
            raise ValueError("the customer token secret must be at least 32 characters")
        self._secret = secret

    @staticmethod
    def audience(product: str) -> str:
        return f"tollway:{product}"

    def issue(
        self, *, account_id: int, product: str, customer_id: str, ttl: int = DEFAULT_TTL
    ) -> str:
        """A token for ``customer_id`` of account ``account_id``, valid ``ttl`` seconds
        on ``product`` only."""
        now = int(time.time())
        claims = {
            "sub": customer_id,
            "acc": account_id,
            "aud": self.audience(product),
            "iat": now,
            "exp": now + ttl,
        }
        return jwt.encode(claims, self._secret, algorithm=ALGORITHM)

    def verify(self, token: str, *, account_id: int, product: str) -> Customer:
        """The customer of ``token``, or :class:`~tollway.Unauthorized` when it is
        malformed, expired, signed otherwise, for another product or another account."""
        customer = self.bearer(token, product=product)
        if customer.account_id != account_id:
            raise Unauthorized(f"{HEADER} is not a valid token for this product")
        return customer

    def bearer(self, token: str, *, product: str, name: str = HEADER) -> Customer:
        """The customer of ``token`` of whichever account issued it: for a keyless route
        the token alone admits (a live stream's ``?token=``), whose ``product`` is an
        audience of its own that no keyed route accepts. :class:`~tollway.Unauthorized`
        (naming the token ``name``) when it is malformed, expired, signed otherwise or
        for another product."""
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._secret,
                algorithms=[ALGORITHM],
                audience=self.audience(product),
                options={"require": ["sub", "aud", "exp", "acc"]},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthorized(f"{name} has expired; sign in again") from None
        except jwt.InvalidTokenError:
            raise Unauthorized(f"{name} is not a valid token for this product") from None
        account_id, subject = claims["acc"], claims["sub"]
        if type(account_id) is not int or not isinstance(subject, str):
            raise Unauthorized(f"{name} is not a valid token for this product")
        return Customer(subject, account_id, product, int(claims["exp"]))
