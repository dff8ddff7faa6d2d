"""Accounts subscribed to the developer product, with a key each, for the tests."""

from __future__ import annotations

from collections.abc import Sequence

from tollway import Gateway, testing
from tollway.testing import Tenant

WEBHOOKS_SCOPE = "webhooks:manage"


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
    plans = {"developer": "standard"}
    return await testing.tenant(gateway, name, plans=plans, scopes=scopes, admin=admin)
