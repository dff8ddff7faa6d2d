"""Accounts subscribed to the developer product, with a key each, for the tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tollway import Gateway

WEBHOOKS_SCOPE = "webhooks:manage"


@dataclass(frozen=True)
class Tenant:
    account_id: int
    key_id: int
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.key)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def tenant(
    gateway: Gateway,
    name: str = "acme",
    *,
    admin: bool = True,
    scopes: Sequence[str] = (WEBHOOKS_SCOPE,),
) -> Tenant:
    """A new account on the developer product's plan and one key of it."""
    account = await gateway.accounts.create_account(name, {"developer": "standard"})
    created = await gateway.accounts.create_key(account, name=name, scopes=scopes, admin=admin)
    return Tenant(account, created.id, created.key)
