"""Default job queue: asyncio tasks in the gateway process."""

from __future__ import annotations

from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl
from tollway.jobs import InProcessJobQueue, JobQueue


@hookimpl(trylast=True)
def tollway_job_queue(gateway: Gateway) -> JobQueue:
    return InProcessJobQueue()
