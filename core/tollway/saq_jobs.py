"""The Redis-backed job queue of the scale-out profile, on SAQ.

Jobs survive the process that enqueued them and run on any process that works the
queue: gateways (``run_jobs = true``, the default) and ``tollway worker`` processes.
A job that was running on a process that died is noticed by its missing heartbeat
(each running job touches it every ``job_heartbeat / 3`` seconds) and run again, up to
``job_retries`` times: jobs must be safe to run twice. The core's durable work
(webhook deliveries, chat sends) already is: a retried job acts only if it still holds
its row's lease (:mod:`tollway.outbox`).

Why SAQ: asyncio-native (no thread or process per job), Redis only, small, maintained
and used in production; its worker, sweep and retry cover what a gateway needs, and a
job is a plain ``async def`` like the in-process queue's. arq is in maintenance-only
mode; Celery and Dramatiq are synchronous at heart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from tollway.jobs import JobFunction, check_arguments

if TYPE_CHECKING:
    from saq import Worker
    from saq.queue.redis import RedisQueue
    from saq.types import Context, PartialTimersDict

log = logging.getLogger("tollway.jobs")


def _redis_queue(redis_url: str, name: str) -> RedisQueue:
    """SAQ's Redis queue, with its sweep made safe against a job being dequeued.

    A worker takes a job by moving its id to the active list and only then marks the
    job active. SAQ's sweep (0.26) retries any job it finds in the active list without
    that mark, so a sweep landing between the two steps ran the job a second time
    (tobymao/saq#277; our CI met it when a worker started on a full queue). Here a job
    found unmarked is retried only if this process's previous sweep found it unmarked
    too: a worker that died between the two steps is still noticed, a sweep later.
    The rest is SAQ's sweep as it stands.
    """
    from saq.job import Status
    from saq.queue.redis import RedisQueue

    class SweepSafeRedisQueue(RedisQueue):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.unmarked: set[str] = set()

        async def sweep(self, lock: int = 60, abort: float = 5.0) -> list[str]:
            # Once per `lock` seconds across all processes, like SAQ's own sweep.
            if not await self.redis.set(self._sweep, 1, ex=lock, nx=True):
                return []
            seen_unmarked, self.unmarked = self.unmarked, set()
            swept: list[str] = []
            for raw_id in await self.redis.lrange(self._active, 0, -1):
                job_id = raw_id.decode() if isinstance(raw_id, bytes) else raw_id
                job = self.deserialize(await self.redis.get(job_id))
                if job is None:
                    async with self.redis.pipeline(transaction=True) as pipe:
                        pipe.lrem(self._active, 0, job_id)
                        pipe.zrem(self._incomplete, job_id)
                        await pipe.execute()
                    log.info("swept missing job %s", job_id)
                    swept.append(job_id)
                    continue
                if job.status == Status.QUEUED and job_id not in seen_unmarked:
                    self.unmarked.add(job_id)  # most likely being dequeued right now
                    continue
                if job.status != Status.ACTIVE or job.stuck:
                    log.info("sweeping job %s", job.info())
                    swept.append(job_id)
                    await self.abort(job, error=self.swept_error_message)
                    try:
                        await job.refresh(abort)
                    except TimeoutError:
                        log.info("could not abort job %s", job_id)
                    if job.retryable:
                        await self.retry(job, error=self.swept_error_message)
                    else:
                        await self.finish(job, Status.ABORTED, error=self.swept_error_message)
            return swept

    return SweepSafeRedisQueue.from_url(redis_url, name=name)


class SaqJobQueue:
    """Jobs in Redis (queue ``name``), worked by ``concurrency`` tasks in this process
    when ``work`` is true."""

    def __init__(
        self,
        redis_url: str,
        *,
        name: str = "tollway",
        concurrency: int = 8,
        work: bool = True,
        timeout: float = 3600,
        heartbeat: float = 15,
        retries: int = 3,
    ) -> None:
        if heartbeat <= 0:
            raise ValueError("job_heartbeat must be positive")
        self.redis_url = redis_url
        self.name = name
        self.concurrency = concurrency
        self.work = work
        self.timeout = timeout
        self.heartbeat = heartbeat
        self.retries = retries
        self._functions: dict[str, JobFunction] = {}
        self._queue: RedisQueue | None = None
        self._worker: Worker[Context] | None = None
        self._worker_task: asyncio.Task[None] | None = None

    def register(self, name: str, function: JobFunction) -> None:
        if name in self._functions:
            raise ValueError(f"job {name!r} is already registered")
        self._functions[name] = function

    def names(self) -> list[str]:
        return list(self._functions)

    def _connect(self) -> RedisQueue:
        if self._queue is None:
            self._queue = _redis_queue(self.redis_url, self.name)
        return self._queue

    async def enqueue(self, name: str, /, **kwargs: Any) -> None:
        if name not in self._functions:
            raise KeyError(f"unknown job {name!r}")
        check_arguments(name, kwargs)
        queue = self._connect()
        await queue.enqueue(
            name,
            timeout=int(self.timeout),
            heartbeat=int(self.heartbeat),
            retries=self.retries,
            **kwargs,
        )

    async def depth(self) -> int:
        """Jobs waiting to be picked up, across every process."""
        return int(await self._connect().count("queued"))

    async def start(self) -> None:
        queue = self._connect()
        await queue.connect()
        if not self.work or not self._functions:
            return
        from saq import Worker
        from saq.types import Context

        class EmbeddedWorker(Worker[Context]):
            SIGNALS: list[Any] = []

        functions = [
            (name, self._job(name, function)) for name, function in self._functions.items()
        ]
        # SAQ's defaults, but the sweep for dead workers' jobs runs every heartbeat.
        timers: PartialTimersDict = {
            "schedule": 1,
            "worker_info": 10,
            "sweep": max(1, int(self.heartbeat)),
            "abort": 1,
        }
        self._worker = EmbeddedWorker(
            queue,
            functions=functions,
            concurrency=self.concurrency,
            timers=timers,
            dequeue_timeout=1.0,  # idle tasks notice a stop within a second
            shutdown_grace_period_s=int(self.timeout),
        )
        self._worker_task = asyncio.create_task(self._worker.start(), name="tollway-saq-worker")

    def _job(self, name: str, function: JobFunction) -> Any:
        every = self.heartbeat / 3

        async def run(ctx: Context, **kwargs: Any) -> None:
            job = ctx["job"]

            async def beat() -> None:
                while True:
                    await asyncio.sleep(every)
                    with contextlib.suppress(Exception):
                        await job.update()

            beating = asyncio.create_task(beat())
            try:
                await function(**kwargs)
            finally:
                beating.cancel()
                await asyncio.gather(beating, return_exceptions=True)

        run.__qualname__ = run.__name__ = name
        return run

    async def stop(self) -> None:
        """Stop taking jobs and wait for running ones to finish; queued ones stay in
        Redis for the next process."""
        if self._worker is not None:
            if hasattr(self._worker, "event"):  # made by Worker.start
                self._worker.event.set()
            # SAQ waits for its periodic upkeep tasks to wake too (up to the sweep
            # interval): end them now, and let only the job tasks run out.
            for task in list(self._worker.tasks):
                if task.get_name() != "process":
                    task.cancel()
            await self._worker.stop()
        if self._worker_task is not None:
            await asyncio.gather(self._worker_task, return_exceptions=True)
        self._worker = self._worker_task = None
        if self._queue is not None:
            await self._queue.disconnect()
            self._queue = None
