"""Batch jobs: up to 100 image URLs, processed in the background.

Submitting checks every URL, reserves one credit per image (402 if the plan's credits
cannot cover them all) and writes the job and its items in that same transaction,
the job leased to a fresh token (:class:`tollway.LeasedColumns`); once it commits, job
``removebg.batch`` (``gateway.jobs``) gets the job id and the token. The job renews
the lease while it runs (every third of ``batch_lease``) and stops taking items if it
loses it. A batch no process holds is found by every process's poll
(``batch_poll_interval``) and queued again: one whose process died before queueing
it or while running it, after its lease lapsed; one whose queueing failed, at once.
A job whose token no longer holds its batch does nothing.

The job fetches up to four images at a time and cuts them out one by one on the
model's thread. Each item ends in one transaction that moves it from ``pending`` to
``completed`` (storing the result, charging its credit) or ``failed`` (giving the
credit back); the move is conditional on ``pending``, so a job that runs again
charges nothing twice. When no item is pending the job is ``completed``, or
``failed`` if every item failed, and its results expire ``result_ttl`` after that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from datetime import datetime
from typing import Any, Final

import msgspec
from sqlalchemy import bindparam, select, update

from tollway import ApiError, BadRequest, Caller, NotFound, renew, utcnow
from tollway_removebg import quota, results, schemas
from tollway_removebg.fetch import check_image_url
from tollway_removebg.images import Rendered, parse_colour
from tollway_removebg.leases import JOB, LEASED, PROCESSING, let_go
from tollway_removebg.models import Job, JobItem, Result
from tollway_removebg.service import NotEnoughCredits, Options, RemoveBg, colour, credits_limit

log = logging.getLogger("tollway.removebg")

PENDING: Final = "pending"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
FETCH_CONCURRENCY = 4


class _AlreadySettled(Exception):
    """The item left ``pending`` elsewhere (the job ran twice): undo this outcome."""


def _references(images: list[schemas.BatchImage]) -> list[str]:
    references = []
    for position, image in enumerate(images, start=1):
        problem = check_image_url(image.url)
        if problem is not None:
            raise BadRequest(f"Invalid request body: images[{position - 1}].url {problem}")
        references.append(image.id if isinstance(image.id, str) else str(position))
    if len(set(references)) != len(references):
        raise BadRequest("Invalid request body: image ids must be unique within a batch")
    return references


async def submit(
    service: RemoveBg, caller: Caller, data: schemas.BatchCreate, base_url: str
) -> schemas.BatchSubmitted:
    references = _references(data.images)
    bg_color = colour(data.bg_color)
    account_id = caller.principal.account_id
    lease_token = secrets.token_hex(16)
    now = service.clock()
    period = quota.period_of(now)
    total = len(data.images)
    job = Job(
        id=results.new_id("job"),
        account_id=account_id,
        status=PROCESSING,
        total=total,
        completed=0,
        failed=0,
        credits_reserved=total,
        credits_used=0,
        period=period,
        output_format=data.output_format,
        output_size=data.output_size,
        bg_color=None if bg_color is None else "#{:02x}{:02x}{:02x}".format(*bg_color),
        base_url=base_url,
        created_at=now,
        lease_until=utcnow() + service.batch_lease,
        lease_token=lease_token,
    )
    async with service.database.transaction() as session:
        if not await quota.reserve(session, account_id, period, total, credits_limit(caller)):
            raise NotEnoughCredits(caller, total)
        session.add(job)
        await session.flush()
        session.add_all(
            JobItem(
                job_id=job.id, position=position, reference=reference, url=image.url, status=PENDING
            )
            for position, (reference, image) in enumerate(
                zip(references, data.images, strict=True), start=1
            )
        )
    try:
        await service.gateway.jobs.enqueue(JOB, job_id=job.id, lease_token=lease_token)
    except Exception:
        # The batch is stored: let its lease go so that the next poll queues it.
        log.exception("could not queue batch %s; the next poll will", job.id)
        with contextlib.suppress(Exception):
            await let_go(service.database, [job.id], lease_token)
    return schemas.BatchSubmitted(
        job_id=job.id,
        status=PROCESSING,
        total=total,
        completed=0,
        failed=0,
        credits_reserved=total,
        created_at=now,
    )


class _JobItemRow(msgspec.Struct):
    """A job and one of its items (``None`` throughout for a job without items), with
    the expiry of the item's result."""

    id: str
    status: schemas.JobStatus
    total: int
    completed: int
    failed: int
    credits_reserved: int
    credits_used: int
    created_at: datetime
    base_url: str
    reference: str | None
    item_status: str | None
    result_id: str | None
    width: int | None
    height: int | None
    error: str | None
    expires_at: datetime | None


JOB_WITH_ITEMS = (
    select(
        Job.id,
        Job.status,
        Job.total,
        Job.completed,
        Job.failed,
        Job.credits_reserved,
        Job.credits_used,
        Job.created_at,
        Job.base_url,
        JobItem.reference,
        JobItem.status,
        JobItem.result_id,
        JobItem.width,
        JobItem.height,
        JobItem.error,
        Result.expires_at,
    )
    .outerjoin(JobItem, JobItem.job_id == Job.id)
    .outerjoin(Result, Result.id == JobItem.result_id)
    .where(Job.id == bindparam("job_id"), Job.account_id == bindparam("account_id"))
    .order_by(JobItem.position)
)


def _item(reference: str, row: _JobItemRow, signer: results.Signer) -> schemas.BatchItem:
    """``row``'s item, the caller's ``reference`` for it as its id."""
    if row.item_status == COMPLETED and row.result_id is not None and row.expires_at is not None:
        return schemas.BatchItem(
            id=reference,
            status=COMPLETED,
            result_url=signer.url(row.base_url, row.result_id, row.expires_at),
            width=row.width,
            height=row.height,
            expires_at=row.expires_at,
        )
    if row.item_status == COMPLETED:
        return schemas.BatchItem(id=reference, status=COMPLETED, width=row.width, height=row.height)
    if row.item_status == FAILED:
        return schemas.BatchItem(id=reference, status=FAILED, error=row.error)
    return schemas.BatchItem(id=reference, status=PROCESSING)


async def status(service: RemoveBg, caller: Caller, job_id: str) -> schemas.BatchJob:
    """The caller's job ``job_id`` and its items, in one statement and no transaction."""
    rows = await service.database.reads.all(
        JOB_WITH_ITEMS, _JobItemRow, job_id=job_id, account_id=caller.principal.account_id
    )
    if not rows:
        raise NotFound(f"Batch job {job_id} not found")
    signer = await service.signer()
    job = rows[0]
    return schemas.BatchJob(
        job_id=job.id,
        status=job.status,
        total=job.total,
        completed=job.completed,
        failed=job.failed,
        credits_reserved=job.credits_reserved,
        credits_used=job.credits_used,
        created_at=job.created_at,
        items=[_item(row.reference, row, signer) for row in rows if row.reference is not None],
    )


# The job ----------------------------------------------------------------------------


async def run(service: RemoveBg, job_id: str, lease_token: str) -> None:
    """Job ``removebg.batch``: every pending item of ``job_id``, then the verdict, as
    long as ``lease_token`` holds the batch."""
    lease = service.batch_lease
    async with service.database.transaction() as session:
        if not await renew(session, LEASED, job_id, lease_token, lease):
            log.info("batch %s is finished or held by another run; skipped", job_id)
            return
        job = await session.scalar(select(Job).where(Job.id == job_id))
        pending = (
            await session.scalars(
                select(JobItem)
                .where(JobItem.job_id == job_id, JobItem.status == PENDING)
                .order_by(JobItem.position)
            )
        ).all()
    if job is None:
        return
    options = Options(
        job.output_format,  # type: ignore[arg-type]
        job.output_size,  # type: ignore[arg-type]
        None if job.bg_color is None else parse_colour(job.bg_color),
    )
    fetching = asyncio.Semaphore(FETCH_CONCURRENCY)
    held = True

    async def keep_lease() -> None:
        nonlocal held
        while held:
            await asyncio.sleep(lease.total_seconds() / 3)
            try:
                async with service.database.transaction() as session:
                    held = await renew(session, LEASED, job_id, lease_token, lease)
            except Exception:  # the database is away: the lease may lapse meanwhile
                log.warning("could not renew the lease on batch %s", job_id, exc_info=True)
        log.warning("batch %s was taken over by another run; this one stops", job_id)

    async def one(item: JobItem) -> None:
        try:
            async with fetching:
                if not held:
                    return
                source = await service.fetcher.fetch(item.url)
            rendered = await service.render(source, options)
        except ApiError as error:
            await _fail(service, job, item, error.message)
        except Exception:
            log.exception("batch %s item %s failed", job_id, item.position)
            await _fail(service, job, item, "Internal error while processing this image")
        else:
            await _complete(service, job, item, rendered)

    keeper = asyncio.create_task(keep_lease())
    try:
        await asyncio.gather(*(one(item) for item in pending))
    finally:
        keeper.cancel()
        await asyncio.gather(keeper, return_exceptions=True)
    if held:
        await _finish(service, job)


async def _settle_item(
    service: RemoveBg,
    job: Job,
    item: JobItem,
    status: str,
    changes: dict[str, Any],
    result: Result | None = None,
) -> bool:
    """Move ``item`` out of ``pending`` (storing ``result``) with its job counters and
    credits; nothing if it already left ``pending``."""
    charged = 1 if status == COMPLETED else 0
    try:
        async with service.database.transaction() as session:
            if result is not None:
                session.add(result)
            moved = await session.execute(
                update(JobItem)
                .where(JobItem.id == item.id, JobItem.status == PENDING)
                .values(status=status, **changes)
            )
            if not moved.rowcount:  # type: ignore[attr-defined]
                raise _AlreadySettled
            counter = Job.completed if status == COMPLETED else Job.failed
            await session.execute(
                update(Job)
                .where(Job.id == job.id)
                .values({counter: counter + 1, Job.credits_used: Job.credits_used + charged})
            )
            if charged:
                await quota.charge(
                    session, job.account_id, job.period, images=1, credits=1, at=service.clock()
                )
            else:
                await quota.settle(session, job.account_id, job.period, charged=0, released=1)
    except _AlreadySettled:
        return False
    return True


async def _complete(service: RemoveBg, job: Job, item: JobItem, rendered: Rendered) -> None:
    stored = results.stored_result(
        rendered,
        account_id=job.account_id,
        now=service.clock(),
        ttl=service.settings.result_ttl,
        job_id=job.id,
    )
    changes = {"result_id": stored.id, "width": rendered.width, "height": rendered.height}
    await _settle_item(service, job, item, COMPLETED, changes, stored)


async def _fail(service: RemoveBg, job: Job, item: JobItem, error: str) -> None:
    await _settle_item(service, job, item, FAILED, {"error": error[:2000]})


async def _finish(service: RemoveBg, job: Job) -> None:
    """Give the job its verdict once nothing is pending; results expire from then."""
    now = service.clock()
    async with service.database.transaction() as session:
        left = await session.scalar(
            select(JobItem.id).where(JobItem.job_id == job.id, JobItem.status == PENDING).limit(1)
        )
        if left is not None:
            return
        current = await session.scalar(select(Job).where(Job.id == job.id))
        if current is None or current.status != PROCESSING:
            return
        verdict = COMPLETED if current.completed > 0 else FAILED
        await session.execute(
            update(Job)
            .where(Job.id == job.id, Job.status == PROCESSING)
            .values(status=verdict, finished_at=now, **LEASED.released())
        )
        await session.execute(
            update(Result)
            .where(Result.job_id == job.id)
            .values(expires_at=service.result_expiry(now))
        )
    await service.purge()
