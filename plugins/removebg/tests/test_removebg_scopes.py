"""Spec 4.2: "The single-image scope also covers batch processing as listed". Keys
holding only a batch scope keep what they had, and no more."""

from __future__ import annotations

from pathlib import Path

from removebg_setup import API, b64, picture, removebg_setup, tenant

from tollway import hookimpl
from tollway.testing import GatewayFactory
from tollway_removebg.product import BATCH_READ, BATCH_WRITE, PROCESS, QUOTA_READ, SCOPES

BATCH = {"images": [{"url": "https://a.example/x.png"}]}


async def test_the_single_image_scope_submits_and_polls_batches(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        single = await tenant(setup.gateway, "single", scopes=[PROCESS])
        submitted = await setup.client.post(f"{API}/batch", json=BATCH, headers=single.headers)
        job_id = submitted.json()["job_id"]
        polled = await setup.client.get(f"{API}/batch/{job_id}", headers=single.headers)
        processed = await setup.client.post(
            f"{API}/process", json={"image_base64": b64(picture())}, headers=single.headers
        )
        quota = await setup.client.get(f"{API}/quota", headers=single.headers)
    assert submitted.status_code == 202
    assert polled.status_code == 200
    assert polled.json()["job_id"] == job_id
    assert processed.status_code == 200
    assert quota.status_code == 403  # the quota scope is not covered
    assert QUOTA_READ in quota.json()["detail"]


async def test_batch_scopes_grant_only_batches(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        writer = await tenant(setup.gateway, "writer", scopes=[BATCH_WRITE])
        reader = await tenant(setup.gateway, "reader", scopes=[BATCH_READ])
        submitted = await setup.client.post(f"{API}/batch", json=BATCH, headers=writer.headers)
        single = await setup.client.post(
            f"{API}/process", json={"image_base64": b64(picture())}, headers=writer.headers
        )
        unread = await setup.client.get(
            f"{API}/batch/{submitted.json()['job_id']}", headers=writer.headers
        )
        unwritten = await setup.client.post(f"{API}/batch", json=BATCH, headers=reader.headers)
    assert submitted.status_code == 202
    assert single.status_code == 403
    assert PROCESS in single.json()["detail"]
    assert unread.status_code == 403
    assert unwritten.status_code == 403


def test_the_scope_catalog_says_what_covers_what() -> None:
    assert f"covers {BATCH_WRITE} and {BATCH_READ}" in SCOPES[PROCESS]
    for batch_scope in (BATCH_WRITE, BATCH_READ):
        assert f"also granted by {PROCESS}" in SCOPES[batch_scope]
    assert "granted by" not in SCOPES[QUOTA_READ]


class PrefixScopes:
    """A deployment's own checker: a scope ending in ``:*`` grants its whole family."""

    def grants(self, held: frozenset[str], required: str) -> bool:
        family = required.rsplit(":", 1)[0] + ":*"
        return required in held or family in held

    @hookimpl
    def tollway_scope_checker(self) -> PrefixScopes:
        return self


async def test_a_deployments_own_scope_checker_keeps_its_rules(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    checker = PrefixScopes()
    setup_options = {"extra_plugins": [("prefix-scopes", checker)]}
    async with removebg_setup(gateway_factory, removebg_tiny_model, **setup_options) as setup:
        grants = setup.gateway.scope_checker.grants
    assert grants(frozenset({"removebg:batch:*"}), BATCH_READ)  # the deployment's rule
    assert grants(frozenset({"removebg:images:*"}), BATCH_WRITE)  # ... covering batches
    assert grants(frozenset({PROCESS}), BATCH_READ)
    assert not grants(frozenset({PROCESS}), QUOTA_READ)
    assert not grants(frozenset({BATCH_WRITE}), PROCESS)
