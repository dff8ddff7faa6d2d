"""Accounts subscribed to the developer product, with a key each, for the tests."""

from __future__ import annotations

from collections.abc import Sequence

from tollway import Gateway
from tollway.testing import Tenant
from tollway.testing import tenant as subscribed_tenant
from tollway_developer.product import PRODUCT, WEBHOOKS_SCOPE

__all__ = ["WEBHOOKS_SCOPE", "Tenant", "bearer", "tenant"]


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
    plans = {PRODUCT.name: "standard"}
    return await subscribed_tenant(gateway, name, plans=plans, scopes=scopes, admin=admin)
