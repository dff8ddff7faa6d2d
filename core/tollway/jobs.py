"""Background jobs: the queue hook and its in-process asyncio default.

A job is a named async function registered on the queue plus JSON-able keyword
arguments, so the same job can later run on another process's queue (SAQ) unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

log = logging.getLogger("tollway.jobs")

JobFunction = Callable[..., Awaitable[None]]

RESERVED_ARGUMENTS = frozenset(
    {
        "attempts", "completed", "error", "function", "group_key", "heartbeat", "key",
        "kwargs", "meta", "priority", "progress", "queue", "queued", "result", "retries",
        "retry_backoff", "retry_delay", "scheduled", "started", "status", "timeout",
        "touched", "ttl", "worker_id",
    }
)  # fmt: skip
"""Names a job's arguments must not have: SAQ takes them as its own settings of the
job (a job argument ``attempts`` would silently become SAQ's attempt counter), so every
queue refuses them, the in-process one included, to fail in tests on any backend."""


def check_arguments(name: str, kwargs: dict[str, Any]) -> None:
    """Refuse job arguments a queue would not pass on unchanged."""
    clashes = sorted(RESERVED_ARGUMENTS.intersection(kwargs))
    if clashes:
        raise ValueError(
            f"job {name!r}: argument names {clashes} are reserved by the job queue; rename them"
        )


class JobQueue(Protocol):
    def register(self, name: str, function: JobFunction) -> None:
        """Make ``function`` runnable as job ``name``; names are global."""
        ...

    async def enqueue(self, name: str, /, **kwargs: Any) -> None:
        """Run job ``name`` with ``kwargs`` in the background, soon. ``kwargs`` must be
        JSON-able and not named in :data:`RESERVED_ARGUMENTS`."""
        ...

    async def depth(self) -> int:
        """Jobs waiting to start, for the ``tollway_job_queue_depth`` metric. Optional:
        a queue without this method is served, its depth is not reported."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None:
        """Stop taking jobs and wait for running ones to finish."""
        ...


class InProcessJobQueue:
    """Runs jobs as tasks on the gateway's event loop, ``concurrency`` at a time.

    Jobs die with the process: durable work belongs on the Redis-backed queue.
    """

    def __init__(self, concurrency: int = 8) -> None:
        self._functions: dict[str, JobFunction] = {}
        self._queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self._concurrency = concurrency
        self._workers: list[asyncio.Task[None]] = []

    def register(self, name: str, function: JobFunction) -> None:
        if name in self._functions:
            raise ValueError(f"job {name!r} is already registered")
        self._functions[name] = function

    async def enqueue(self, name: str, /, **kwargs: Any) -> None:
        if name not in self._functions:
            raise KeyError(f"unknown job {name!r}")
        check_arguments(name, kwargs)
        await self._queue.put((name, kwargs))

    async def depth(self) -> int:
        return self._queue.qsize()

    async def start(self) -> None:
        self._workers = [asyncio.create_task(self._work()) for _ in range(self._concurrency)]

    async def stop(self) -> None:
        await self._queue.join()
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []

    async def _work(self) -> None:
        while True:
            name, kwargs = await self._queue.get()
            try:
                await self._functions[name](**kwargs)
            except Exception:
                log.exception("job %s failed", name)
            finally:
                self._queue.task_done()
