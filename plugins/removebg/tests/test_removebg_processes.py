"""A batch on the scale-out profile, with real processes: the gateway only accepts it,
``tollway worker`` processes do it, and when the worker running it is killed (SIGKILL)
another finishes it without charging any image twice."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from conftest import ImageServer, Page
from removebg_setup import picture, tenant

from tollway.testing import (
    Backend,
    GatewayFactory,
    GatewayProcess,
    WorkerProcess,
    deployment_settings,
)

pytestmark = pytest.mark.slow


async def test_a_batch_survives_its_worker_being_killed(
    backend: Backend,
    gateway_factory: GatewayFactory,
    removebg_tiny_model: Path,
    image_server: ImageServer,
    tmp_path: Path,
) -> None:
    if backend.redis_url is None:
        pytest.skip("workers need the scale-out profile (PostgreSQL and Redis)")
    gateway = await gateway_factory(plugins=["removebg"], isolated=True)
    owner = await tenant(gateway, "acme", plan="pro")
    config = tmp_path / "removebg.toml"
    config.write_text(
        "[products.removebg.settings]\n"
        f'model_path = "{removebg_tiny_model}"\nallow_private_urls = true\n'
    )
    settings = {**deployment_settings(gateway), "job_heartbeat": 2, "config": config}
    for n in range(6):
        image_server.pages[f"/{n}.png"] = Page(body=picture((160, 120)))
    image_server.pages["/5.png"].delay = 60  # the last image holds the job up
    images = [{"url": image_server.url(f"/{n}.png"), "id": f"img-{n}"} for n in range(6)]
    with GatewayProcess(plugins=["removebg"], run_jobs=False, **settings) as server:
        async with httpx.AsyncClient(
            base_url=f"{server.url}/v1/removebg", headers=owner.headers, timeout=30
        ) as client:
            doomed = WorkerProcess(plugins=["removebg"], **settings).start()
            try:
                submitted = await client.post("/batch", json={"images": images})
                assert submitted.status_code == 202, submitted.text
                job_id = submitted.json()["job_id"]
                deadline = time.monotonic() + 60
                while True:  # until the first worker is stuck on the last image
                    job = (await client.get(f"/batch/{job_id}")).json()
                    if job["completed"] == 5 and "/5.png" in image_server.requests:
                        break
                    assert time.monotonic() < deadline, job
                    await asyncio.sleep(0.2)
            finally:
                doomed.kill()
            image_server.pages["/5.png"].delay = 0
            with WorkerProcess(plugins=["removebg"], **settings):
                deadline = time.monotonic() + 60
                while (job := (await client.get(f"/batch/{job_id}")).json())[
                    "status"
                ] == "processing":
                    assert time.monotonic() < deadline, job
                    await asyncio.sleep(0.2)
            quota = (await client.get("/quota")).json()
    assert (job["status"], job["completed"], job["failed"]) == ("completed", 6, 0)
    assert {item["id"] for item in job["items"]} == {f"img-{n}" for n in range(6)}
    # Five images were done before the kill and one after: six credits, not eleven.
    assert (quota["credits_used"], quota["credits_reserved"]) == (6, 0)
    assert image_server.requests.count("/0.png") == 1  # finished items were not redone
