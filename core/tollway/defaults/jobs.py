"""Default job queue: SAQ on Redis in the scale-out profile, else asyncio tasks in the
gateway process (``job_queue`` setting)."""

from __future__ import annotations

from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl
from tollway.jobs import InProcessJobQueue, JobQueue


@hookimpl(trylast=True)
def tollway_job_queue(gateway: Gateway) -> JobQueue:
    settings = gateway.settings
    kind = settings.job_queue
    if kind == "auto":
        kind = "redis" if settings.redis_url else "memory"
    if kind == "memory":
        return InProcessJobQueue(settings.job_concurrency)
    if not settings.redis_url:
        raise ValueError("job_queue = 'redis' needs redis_url")
    from tollway.saq_jobs import SaqJobQueue

    return SaqJobQueue(
        settings.redis_url,
        name=settings.job_queue_name,
        concurrency=settings.job_concurrency,
        work=settings.run_jobs,
        timeout=settings.job_timeout,
        heartbeat=settings.job_heartbeat,
        retries=settings.job_retries,
    )
