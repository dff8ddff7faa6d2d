"""The Redis job queue (SAQ) against a real Redis: jobs cross processes' queues, fail
into retries, outlive a stopped process, and are counted."""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

import pytest
from saq.job import Status
from saq.utils import now

from tollway import Gateway, load_settings
from tollway.jobs import InProcessJobQueue
from tollway.saq_jobs import SaqJobQueue
from tollway.testing import RedisServer


@pytest.fixture
def queue_name() -> str:
    return f"tollway-test-{secrets.token_hex(6)}"


def _queue(redis: RedisServer, name: str, **options: Any) -> SaqJobQueue:
    return SaqJobQueue(redis.url, name=name, heartbeat=options.pop("heartbeat", 3), **options)


async def _until(condition: Any, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_a_job_enqueued_on_one_process_runs_on_another(
    own_redis: RedisServer, queue_name: str
) -> None:
    ran: list[dict[str, Any]] = []

    async def record(**kwargs: Any) -> None:
        ran.append(kwargs)

    gateway_side = _queue(own_redis, queue_name, work=False)
    worker_side = _queue(own_redis, queue_name)
    for queue in (gateway_side, worker_side):
        queue.register("record", record)
    await gateway_side.start()
    try:
        await gateway_side.enqueue("record", message_id=7, token="abc")
        await gateway_side.enqueue("record", message_id=8, token="def")
        await asyncio.sleep(0.3)
        assert ran == []  # the enqueuing side does not work jobs
        assert await gateway_side.depth() == 2
        await worker_side.start()
        await _until(lambda: len(ran) >= 2)
        await asyncio.sleep(0.3)  # a job run twice would show up by now
        assert sorted(ran, key=lambda kwargs: kwargs["message_id"]) == [
            {"message_id": 7, "token": "abc"},
            {"message_id": 8, "token": "def"},
        ]
        assert await gateway_side.depth() == 0
    finally:
        await worker_side.stop()
        await gateway_side.stop()


async def test_a_job_being_dequeued_is_not_swept_but_a_dropped_one_is(
    own_redis: RedisServer, queue_name: str
) -> None:
    """A worker moves a job to the active list a moment before marking it active; a
    sweep in that moment must not run it again (tobymao/saq#277). A job left unmarked
    by a worker that died in that moment is retried by the next sweep."""
    queue = _queue(own_redis, queue_name, work=False, heartbeat=60)

    async def job(n: int) -> None:
        pass

    queue.register("job", job)
    await queue.start()
    saq = queue._connect()

    async def take() -> str:  # a worker's first step, without its second
        job_id = await saq.redis.lmove(saq._queued, saq._active, "LEFT", "RIGHT")
        assert job_id is not None
        return bytes(job_id).decode()

    async def sweep() -> list[str]:
        await saq.redis.delete(saq._sweep)  # as if the sweep interval had passed
        return await saq.sweep(lock=60, abort=0.1)

    try:
        await queue.enqueue("job", n=1)
        await queue.enqueue("job", n=2)
        being_dequeued, dropped = await take(), await take()
        assert await sweep() == []
        marked = saq.deserialize(await saq.redis.get(being_dequeued))
        assert marked is not None
        marked.started = now()
        await marked.update(status=Status.ACTIVE)  # the worker's second step
        assert await sweep() == [dropped]
        assert await saq.redis.lrange(saq._active, 0, -1) == [being_dequeued.encode()]
        assert await queue.depth() == 1  # the dropped job waits to run again
        assert await sweep() == []
    finally:
        await queue.stop()


async def test_a_failing_job_is_retried_until_its_attempts_run_out(
    own_redis: RedisServer, queue_name: str
) -> None:
    attempts: list[int] = []

    async def flaky(n: int) -> None:
        attempts.append(n)
        raise RuntimeError("receiver down")

    queue = _queue(own_redis, queue_name, retries=3)
    queue.register("flaky", flaky)
    await queue.start()
    try:
        await queue.enqueue("flaky", n=1)
        await _until(lambda: len(attempts) == 3)
        await asyncio.sleep(0.5)
        assert attempts == [1, 1, 1]
    finally:
        await queue.stop()


async def test_stop_finishes_running_jobs_and_leaves_queued_ones_for_the_next(
    own_redis: RedisServer, queue_name: str
) -> None:
    finished: list[int] = []
    started = asyncio.Event()

    async def slow(n: int) -> None:
        started.set()
        await asyncio.sleep(0.5)
        finished.append(n)

    first = _queue(own_redis, queue_name, concurrency=1)
    first.register("slow", slow)
    await first.start()
    for n in range(3):
        await first.enqueue("slow", n=n)
    await asyncio.wait_for(started.wait(), 10)
    began = time.monotonic()
    await first.stop()
    assert time.monotonic() - began < 5
    assert finished == [0]  # the running job finished; the others still wait
    second = _queue(own_redis, queue_name, concurrency=1)
    second.register("slow", slow)
    await second.start()
    try:
        await _until(lambda: len(finished) == 3)
        assert sorted(finished) == [0, 1, 2]
    finally:
        await second.stop()


async def test_unknown_jobs_are_refused_and_names_are_unique(
    own_redis: RedisServer, queue_name: str
) -> None:
    queue = _queue(own_redis, queue_name)

    async def job() -> None:
        pass

    queue.register("job", job)
    with pytest.raises(ValueError, match="already registered"):
        queue.register("job", job)
    with pytest.raises(KeyError):
        await queue.enqueue("nothing")
    with pytest.raises(ValueError, match="heartbeat"):
        SaqJobQueue(own_redis.url, heartbeat=0)


def test_the_queue_follows_the_settings(own_redis: RedisServer) -> None:
    def jobs(**settings: Any) -> Any:
        return Gateway(load_settings(environ={}, plugins=[], **settings)).jobs

    assert isinstance(jobs(), InProcessJobQueue)
    redis_queue = jobs(redis_url=own_redis.url, job_queue_name="q", run_jobs=False)
    assert isinstance(redis_queue, SaqJobQueue)
    assert (redis_queue.name, redis_queue.work) == ("q", False)
    assert isinstance(jobs(redis_url=own_redis.url, job_queue="memory"), InProcessJobQueue)
    with pytest.raises(ValueError, match="needs redis_url"):
        jobs(job_queue="redis")
