"""Credits per plan and calendar month: reserved atomically, charged on success."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from removebg_setup import API, b64, picture, removebg_setup

from tollway.testing import GatewayFactory
from tollway_removebg.service import RemoveBg


async def test_quota_reports_the_plan_and_the_month(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model, plan="free") as setup:
        setup.gateway.service(RemoveBg).clock = lambda: datetime(2025, 12, 15, 10, tzinfo=UTC)
        await setup.process(image_base64=b64(picture()))
        quota = await setup.get("/quota")
        unscoped = await setup.gateway.accounts.create_key(
            setup.owner.account_id, scopes=["removebg:images:process"]
        )
        refused = await setup.client.get(
            API + "/quota", headers={"Authorization": f"Bearer {unscoped.key}"}
        )
    assert quota == {
        "plan": "free",
        "credits_total": 50,
        "credits_used": 1,
        "credits_reserved": 0,
        "credits_remaining": 49,
        "resets_at": "2026-01-01T00:00:00Z",
    }
    assert refused.status_code == 403


async def test_concurrent_requests_never_overdraw(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    body = {"image_base64": b64(picture((160, 120)))}
    async with removebg_setup(gateway_factory, removebg_tiny_model, credits=3) as setup:
        answers = await asyncio.gather(
            *(
                setup.client.post(API + "/process", json=body, headers=setup.owner.headers)
                for _ in range(10)
            )
        )
        quota = await setup.get("/quota")
        other = await setup.get("/quota", tenant=setup.other)
    assert sorted(answer.status_code for answer in answers) == [200] * 3 + [402] * 7
    refused = next(answer for answer in answers if answer.status_code == 402)
    assert refused.headers["content-type"] == "application/json"
    assert "Not enough credits" in refused.json()["detail"]
    assert (quota["credits_used"], quota["credits_reserved"], quota["credits_remaining"]) == (
        3,
        0,
        0,
    )
    assert other["credits_used"] == 0  # credits are the account's own


async def test_credits_come_back_each_month(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model, credits=1) as setup:
        service = setup.gateway.service(RemoveBg)
        service.clock = lambda: datetime(2026, 1, 31, 23, 59, tzinfo=UTC)
        await setup.process(image_base64=b64(picture()))
        spent = await setup.process(expect=402, image_base64=b64(picture()))
        batch = await setup.post(
            "/batch", {"images": [{"url": "https://a.example/x.png"}]}, expect=402
        )
        service.clock = lambda: datetime(2026, 2, 1, 0, 0, tzinfo=UTC)
        quota = await setup.get("/quota")
        await setup.process(image_base64=b64(picture()))
    assert "the 'pro' plan's 1 credits" in spent["detail"]
    assert "needs 1" in batch["detail"]
    assert (quota["credits_used"], quota["credits_remaining"]) == (0, 1)
    assert quota["resets_at"] == "2026-03-01T00:00:00Z"


async def test_a_batch_needs_credits_for_every_image(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    images = [{"url": f"https://a.example/{n}.png"} for n in range(3)]
    async with removebg_setup(gateway_factory, removebg_tiny_model, credits=2) as setup:
        refused = await setup.post("/batch", {"images": images}, expect=402)
        quota = await setup.get("/quota")
    assert "needs 3" in refused["detail"]
    assert (quota["credits_used"], quota["credits_reserved"]) == (0, 0)
