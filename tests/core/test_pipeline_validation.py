"""Validation errors name each parameter as the client sends it, whatever the handler
calls its argument."""

from __future__ import annotations

from typing import Annotated

from litestar import get
from litestar.params import HeaderParameter, QueryParameter
from widget_plugin import WidgetsPlugin

from tollway import RouteRegistrar, hookimpl
from tollway.testing import GatewayFactory, gateway_client


@get("/lookup", scope="widgets:read")
async def lookup(
    limit: Annotated[int, QueryParameter(name="per_page", ge=1, le=10)],
    depth: Annotated[int, HeaderParameter(name="X-Trace-Depth", ge=0)] = 0,
    page: Annotated[int, QueryParameter(ge=1)] = 1,
) -> dict[str, int]:
    return {"limit": limit, "depth": depth, "page": page}


class LookupPlugin(WidgetsPlugin):
    """The widgets product with one route whose parameters are declared under other names."""

    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        register(self.name, [lookup])


async def test_aliased_parameters_are_named_as_sent(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(plugins=[], extra_plugins=[("widgets", LookupPlugin())])
    account = await gateway.accounts.create_account("acme", {"widgets": "big"})
    key = (await gateway.accounts.create_key(account, scopes=["widgets:read"])).key
    bearer = {"Authorization": f"Bearer {key}"}
    async with gateway_client(gateway) as client:
        query = await client.get("/v1/widgets/lookup", params={"per_page": 11}, headers=bearer)
        header = await client.get(
            "/v1/widgets/lookup",
            params={"per_page": 5},
            headers={**bearer, "X-Trace-Depth": "-1"},
        )
        plain = await client.get(
            "/v1/widgets/lookup", params={"per_page": 5, "page": 0}, headers=bearer
        )
        valid = await client.get("/v1/widgets/lookup", params={"per_page": 5}, headers=bearer)
    assert query.status_code == header.status_code == plain.status_code == 400
    assert query.json()["detail"].startswith("Invalid request: per_page: ")
    assert header.json()["detail"].startswith("Invalid request: X-Trace-Depth: ")
    assert plain.json()["detail"].startswith("Invalid request: page: ")
    for refused in (query, header):
        assert "limit" not in refused.json()["detail"]
        assert "depth" not in refused.json()["detail"]
    assert valid.json() == {"limit": 5, "depth": 0, "page": 1}
