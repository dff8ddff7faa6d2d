"""Broad scopes: a scope registered with ``grants=`` admits a key holding it to the
routes requiring what it grants, and nothing else; a grant of an unregistered scope,
of itself or of a scope that grants in turn fails start-up naming the plugin."""

from __future__ import annotations

from typing import Any

import pytest
from widget_plugin import WidgetsPlugin

from tollway import Gateway, RegistrationError, ScopeRegistrar, hookimpl, load_settings
from tollway.testing import GatewayFactory, gateway_client


class Grants:
    """Registers ``name`` granting ``granted``."""

    def __init__(self, *scopes: tuple[str, tuple[str, ...]]) -> None:
        self.scopes = scopes

    @hookimpl
    def tollway_register_scopes(self, register: ScopeRegistrar) -> None:
        for name, granted in self.scopes:
            register(name, f"grants {', '.join(granted)}", grants=granted)


def _gateway(grants: Grants) -> Gateway:
    settings = load_settings(environ={}, plugins=[], database_url="sqlite+aiosqlite:///:memory:")
    return Gateway(settings, extra_plugins=[("widgets", WidgetsPlugin()), ("grants", grants)])


@pytest.mark.parametrize(
    ("grants", "message"),
    [
        (Grants(("widgets:all", ("widgets:delete",))), "grants 'widgets:delete', which is not"),
        (Grants(("widgets:all", ("widgets:all",))), "grants 'widgets:all', which is not another"),
        (
            Grants(("widgets:all", ("widgets:some",)), ("widgets:some", ("widgets:read",))),
            "grants 'widgets:some', which grants scopes itself",
        ),
    ],
    ids=["unregistered", "itself", "chained"],
)
def test_a_bad_grant_fails_start_up_naming_the_plugin(grants: Grants, message: str) -> None:
    with pytest.raises(RegistrationError, match=message) as raised:
        _gateway(grants)
    assert "plugin 'grants'" in str(raised.value)


async def _answers(gateway: Gateway, scopes: list[str]) -> dict[str, Any]:
    account = await gateway.accounts.create_account("acme", {"widgets": "big"})
    key = (await gateway.accounts.create_key(account, scopes=scopes)).key
    headers = {"Authorization": f"Bearer {key}"}
    async with gateway_client(gateway) as client:
        read = await client.get("/v1/widgets/widgets", headers=headers)
        write = await client.post("/v1/widgets/widgets", json={"name": "x"}, headers=headers)
    return {"read": read.status_code, "write": write.status_code, "denied": write.json()}


async def test_a_broad_scope_admits_what_it_grants_and_nothing_else(
    gateway_factory: GatewayFactory,
) -> None:
    grants = Grants(("widgets:reader", ("widgets:read",)))
    gateway = await gateway_factory(
        plugins=[], extra_plugins=[("widgets", WidgetsPlugin()), ("grants", grants)]
    )
    answers = await _answers(gateway, ["widgets:reader"])
    assert (answers["read"], answers["write"]) == (200, 403)
    assert "widgets:write" in answers["denied"]["detail"]


async def test_the_narrow_scope_alone_still_admits(gateway_factory: GatewayFactory) -> None:
    grants = Grants(("widgets:reader", ("widgets:read",)))
    gateway = await gateway_factory(
        plugins=[], extra_plugins=[("widgets", WidgetsPlugin()), ("grants", grants)]
    )
    answers = await _answers(gateway, ["widgets:read", "widgets:write"])
    assert (answers["read"], answers["write"]) == (200, 201)
