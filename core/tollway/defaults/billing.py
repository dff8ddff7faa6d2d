"""The billing engine's time-driven work: the job that runs what is due, and the clock
enqueueing it while the gateway runs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from tollway.billing.engine import RUN_JOB
from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl
from tollway.jobs import JobFunction


@hookimpl
def tollway_register_jobs(register: Callable[[str, JobFunction], None], gateway: Gateway) -> None:
    async def run_due(as_of: str) -> None:
        await gateway.billing.run_due(datetime.fromisoformat(as_of))

    register(RUN_JOB, run_due)


@hookimpl
async def tollway_startup(gateway: Gateway) -> None:
    await gateway.billing.start()


@hookimpl
async def tollway_shutdown(gateway: Gateway) -> None:
    await gateway.billing.stop()
