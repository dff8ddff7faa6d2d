"""Which process holds a batch: the lease on its row, and queueing the unheld ones.

A batch is leased (:class:`tollway.LeasedColumns`) to the run that processes it. A batch no
process holds, because its process died before queueing it or while running it, or
because queueing it failed, is found by :func:`queue_unheld`, which every process's
service polls (``batch_poll_interval``), and queued again under a fresh lease.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Final

from sqlalchemy import update

from tollway import Database, JobQueue, LeasedColumns, claim_due
from tollway_removebg.models import Job

log = logging.getLogger("tollway.removebg")

JOB: Final = "removebg.batch"
PROCESSING: Final = "processing"
CLAIM_BATCH = 10

LEASED = LeasedColumns(
    model=Job,
    id=Job.id,
    pending=Job.status == PROCESSING,
    due_at=Job.created_at,  # a batch nobody holds is due at once
    lease_until=Job.lease_until,
    lease_token=Job.lease_token,
)


async def let_go(database: Database, job_ids: list[str], lease_token: str) -> None:
    """Release the lease ``lease_token`` holds on ``job_ids`` (they were not queued),
    so that the next poll queues them."""
    async with database.transaction() as session:
        await session.execute(
            update(Job)
            .where(Job.id.in_(job_ids), Job.lease_token == lease_token)
            .values(LEASED.released())
        )


async def queue_unheld(database: Database, jobs: JobQueue, lease: timedelta) -> int:
    """One poll: lease up to a batch of unheld batches and queue their jobs."""
    token, claimed = await claim_due(database, LEASED, lease=lease, limit=CLAIM_BATCH)
    for position, job_id in enumerate(claimed):
        log.info("queueing batch %s, which no process held", job_id)
        try:
            await jobs.enqueue(JOB, job_id=job_id, lease_token=token)
        except Exception:
            await let_go(database, claimed[position:], token)
            raise
    return len(claimed)
