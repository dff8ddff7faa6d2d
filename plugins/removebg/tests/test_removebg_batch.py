"""Batch jobs: background processing on the job queue, per-item outcomes, credits
charged once per completed image, tenant isolation."""

from __future__ import annotations

import asyncio
import io
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ImageServer, Page
from PIL import Image
from removebg_setup import Setup, encoded, picture, removebg_setup, scene, tenant, tiny_settings

from tollway import Gateway, JobFunction, hookimpl, utcnow
from tollway.testing import GatewayFactory, ProductClient, RedisServer, gateway_client
from tollway_removebg import batch, leases
from tollway_removebg.service import RemoveBg

PRIVATE = {"allow_private_urls": True}


async def _finished(setup: Setup, job_id: str) -> dict[str, Any]:
    """The job once it has left ``processing``. No deadline of its own: how long the
    model takes to load depends on the machine; a hang is pytest-timeout's to report."""
    while True:
        job: dict[str, Any] = await setup.get(f"/batch/{job_id}")
        if job["status"] != "processing":
            return job
        await asyncio.sleep(0.05)


async def test_a_mixed_batch_completes_with_per_item_outcomes(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, image_server: ImageServer
) -> None:
    image_server.pages["/a.png"] = Page(body=picture((320, 240)))
    image_server.pages["/b.jpg"] = Page(body=encoded(scene((200, 100))[0], "JPEG"))
    image_server.pages["/text"] = Page(body=b"hello", content_type="text/plain")
    images = [
        {"url": image_server.url("/a.png"), "id": "product-1"},
        {"url": image_server.url("/missing.png")},
        {"url": image_server.url("/b.jpg"), "id": "product-3"},
        {"url": image_server.url("/text"), "id": "product-4"},
    ]
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=PRIVATE) as setup:
        before = utcnow()
        submitted = await setup.post(
            "/batch", {"images": images, "bg_color": "#ffffff"}, expect=202
        )
        job = await _finished(setup, submitted["job_id"])
        quota = await setup.get("/quota")
        downloads = [
            await setup.client.get(item["result_url"])
            for item in job["items"]
            if item["status"] == "completed"
        ]
    assert submitted["job_id"].startswith("job_")
    assert {key: submitted[key] for key in submitted if key not in ("job_id", "created_at")} == {
        "status": "processing",
        "total": 4,
        "completed": 0,
        "failed": 0,
        "credits_reserved": 4,
    }
    assert (job["status"], job["completed"], job["failed"]) == ("completed", 2, 2)
    assert (job["credits_reserved"], job["credits_used"]) == (4, 2)
    first, missing, third, text = job["items"]
    assert (first["id"], first["status"], first["width"], first["height"]) == (
        "product-1",
        "completed",
        320,
        240,
    )
    assert first["expires_at"] > (before + timedelta(hours=23)).isoformat()
    assert missing == {
        "id": "2",
        "status": "failed",
        "error": "image_url is not fetchable: the image URL answered HTTP 404",
    }
    assert (third["id"], third["width"], third["height"]) == ("product-3", 200, 100)
    assert text["status"] == "failed"
    assert "not a JPEG, PNG or WebP" in text["error"]
    assert (quota["credits_used"], quota["credits_reserved"]) == (2, 0)
    for download in downloads:
        assert download.status_code == 200
        image = Image.open(io.BytesIO(download.content))
        assert image.mode == "RGB"
        corner = np.array(image)[:20, :20].reshape(-1, 3).mean(axis=0)
        assert (corner > 235).all(), corner  # the grey background became white


async def test_a_batch_whose_every_image_failed_is_failed(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, image_server: ImageServer
) -> None:
    images = [{"url": image_server.url("/nothing")}, {"url": "http://nowhere.invalid/a.png"}]
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=PRIVATE) as setup:
        submitted = await setup.post("/batch", {"images": images}, expect=202)
        job = await _finished(setup, submitted["job_id"])
        quota = await setup.get("/quota")
    assert (job["status"], job["completed"], job["failed"], job["credits_used"]) == (
        "failed",
        0,
        2,
        0,
    )
    assert (quota["credits_used"], quota["credits_reserved"]) == (0, 0)


async def test_running_a_job_again_charges_nothing_twice(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, image_server: ImageServer
) -> None:
    image_server.pages["/a.png"] = Page(body=picture())
    images = [{"url": image_server.url("/a.png")}, {"url": image_server.url("/gone")}]
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=PRIVATE) as setup:
        submitted = await setup.post("/batch", {"images": images}, expect=202)
        first = await _finished(setup, submitted["job_id"])
        service = setup.gateway.service(RemoveBg)
        stale = "0" * 32  # redelivered jobs: their lease is gone with the batch done
        await batch.run(service, submitted["job_id"], stale)
        await setup.gateway.jobs.enqueue(leases.JOB, job_id=submitted["job_id"], lease_token=stale)
        await asyncio.sleep(0.3)
        again = await setup.get(f"/batch/{submitted['job_id']}")
        quota = await setup.get("/quota")
    assert again == first
    assert (quota["credits_used"], quota["credits_reserved"]) == (1, 0)
    assert image_server.requests.count("/a.png") == 1


async def test_batch_results_expire_a_day_after_the_job_finished(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, image_server: ImageServer
) -> None:
    image_server.pages["/a.png"] = Page(body=picture())
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=PRIVATE) as setup:
        service = setup.gateway.service(RemoveBg)
        start = utcnow()
        service.clock = lambda: start
        submitted = await setup.post(
            "/batch", {"images": [{"url": image_server.url("/a.png")}]}, expect=202
        )
        [item] = (await _finished(setup, submitted["job_id"]))["items"]
        service.clock = lambda: start + timedelta(hours=24, seconds=1)
        expired = await setup.client.get(item["result_url"])
        polled = await setup.get(f"/batch/{submitted['job_id']}")
    assert item["expires_at"] == (start + timedelta(days=1)).isoformat().replace("+00:00", "Z")
    assert expired.status_code == 410
    assert polled["items"][0]["status"] == "completed"


async def test_another_accounts_job_is_404(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        submitted = await setup.post(
            "/batch", {"images": [{"url": "https://a.example/x.png"}]}, expect=202
        )
        stolen = await setup.get(f"/batch/{submitted['job_id']}", expect=404, tenant=setup.other)
        unknown = await setup.get("/batch/job_0123", expect=404)
        reader = await setup.gateway.accounts.create_key(
            setup.owner.account_id, scopes=["removebg:batch:write"]
        )
        unscoped = await setup.client.get(
            f"/v1/removebg/batch/{submitted['job_id']}",
            headers={"Authorization": f"Bearer {reader.key}"},
        )
    assert stolen == {"detail": f"Batch job {submitted['job_id']} not found"}
    assert unknown["detail"] == "Batch job job_0123 not found"
    assert unscoped.status_code == 403


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"images": []}, "images"),
        ({"images": [{"url": f"https://a.example/{n}.png"} for n in range(101)]}, "images"),
        ({"images": [{"url": "file:///etc/passwd"}]}, "images[0].url must start with http"),
        (
            {
                "images": [
                    {"url": "https://a.example/1", "id": "x"},
                    {"url": "https://b.example/2", "id": "x"},
                ]
            },
            "ids must be unique",
        ),
        ({"images": [{"url": "https://a.example/1"}], "bg_color": "blue"}, "not a hex colour"),
        ({"images": [{"url": "https://a.example/1"}], "output_format": "jpeg"}, "output_format"),
        ({"images": [{"href": "https://a.example/1"}]}, "href"),
    ],
)
async def test_invalid_batches_are_400_and_reserve_nothing(
    gateway_factory: GatewayFactory,
    removebg_tiny_model: Path,
    body: dict[str, Any],
    message: str,
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        answer = await setup.post("/batch", body, expect=400)
        quota = await setup.get("/quota")
    assert message in answer["detail"]
    assert quota["credits_reserved"] == 0


async def test_a_full_batch_of_100_is_accepted(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, image_server: ImageServer
) -> None:
    image_server.pages["/a.png"] = Page(body=picture((64, 48)))
    images = [{"url": image_server.url("/a.png"), "id": f"i{n}"} for n in range(100)]
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=PRIVATE) as setup:
        submitted = await setup.post("/batch", {"images": images}, expect=202)
        job = await _finished(setup, submitted["job_id"])
    assert (job["total"], job["completed"], job["credits_used"]) == (100, 100, 100)
    assert [item["id"] for item in job["items"]] == [f"i{n}" for n in range(100)]


class HeldJobs:
    """A job queue that takes jobs and never runs them."""

    def register(self, name: str, function: JobFunction) -> None:
        pass

    async def enqueue(self, name: str, /, **kwargs: Any) -> None:
        pass

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    @hookimpl
    def tollway_job_queue(self, gateway: Gateway) -> HeldJobs:
        return self


async def test_a_batch_cut_off_by_a_stopped_process_is_taken_up_once_its_lease_lapses(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, image_server: ImageServer
) -> None:
    image_server.pages["/a.png"] = Page(body=picture())
    images = [{"url": image_server.url("/a.png")}, {"url": image_server.url("/gone")}]
    products = tiny_settings(removebg_tiny_model, batch_lease=1, batch_poll_interval=0.2, **PRIVATE)
    # The first process accepts the batch, but its queue never runs it and it goes away
    # with the job in memory.
    first = await gateway_factory(
        plugins=["removebg"], extra_plugins=[("held-jobs", HeldJobs())], products=products
    )
    owner = await tenant(first, "acme", plan="pro")
    async with gateway_client(first) as client:
        submitted = await client.post(
            "/v1/removebg/batch", json={"images": images}, headers=owner.headers
        )
    assert submitted.status_code == 202, submitted.text
    job_id = submitted.json()["job_id"]
    await first.database.dispose()
    second = Gateway(first.settings)
    async with gateway_client(second) as client:
        removebg = second.registry.products["removebg"]
        setup = Setup(ProductClient(second, removebg, "pro", (), owner, owner, client, client))
        job = await _finished(setup, job_id)
        quota = await setup.get("/quota")
    assert (job["status"], job["completed"], job["failed"]) == ("completed", 1, 1)
    assert (quota["credits_used"], quota["credits_reserved"]) == (1, 0)


async def test_a_batch_that_could_not_be_queued_is_queued_by_the_next_poll(
    gateway_factory: GatewayFactory,
    removebg_tiny_model: Path,
    image_server: ImageServer,
    own_redis: RedisServer,
) -> None:
    image_server.pages["/a.png"] = Page(body=picture())
    images = [{"url": image_server.url("/a.png")}]
    settings = {**PRIVATE, "batch_poll_interval": 0.2}
    async with removebg_setup(
        gateway_factory,
        removebg_tiny_model,
        settings=settings,
        redis_url=own_redis.url,
        job_queue="redis",
    ) as setup:
        own_redis.stop()  # the job queue is away when the batch is accepted
        submitted = await setup.post("/batch", {"images": images}, expect=202)
        await asyncio.sleep(0.5)
        assert (await setup.get(f"/batch/{submitted['job_id']}"))["status"] == "processing"
        own_redis.start()
        job = await _finished(setup, submitted["job_id"])
        quota = await setup.get("/quota")
    assert (job["status"], job["completed"], job["credits_used"]) == ("completed", 1, 1)
    assert (quota["credits_used"], quota["credits_reserved"]) == (1, 0)
