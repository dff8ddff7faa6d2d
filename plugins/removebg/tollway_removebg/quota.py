"""Credits: each plan grants ``credits_per_month`` per UTC calendar month.

An image is paid for in two steps. ``reserve`` holds credits with one conditional
``UPDATE`` (``used + reserved + n <= limit``), so concurrent requests, on any number
of processes, never overdraw; ``settle`` then turns held credits into charged ones
for the images that succeeded and gives the rest back. Both run inside the caller's
transaction, so a batch item's settlement commits together with its status change
and can never happen twice. A charge (``charge``) is also counted in the account's
usage of its 15 minutes (:class:`~tollway_removebg.models.Usage`), in that same
transaction: the usage report and the credits never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import Reads
from tollway_removebg.models import Credits, Usage

USAGE_BUCKET = timedelta(minutes=15)


def period_of(moment: datetime) -> str:
    """The billing period containing ``moment``: its UTC month, ``YYYY-MM``."""
    return moment.astimezone(UTC).strftime("%Y-%m")


def period_end(period: str) -> datetime:
    """When ``period`` ends and the next one's credits start (``resets_at``)."""
    year, month = (int(part) for part in period.split("-"))
    year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Balance:
    total: int
    used: int
    reserved: int

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.used - self.reserved)


def _insert(session: AsyncSession, table: Any) -> Any:
    """The dialect's ``INSERT`` of ``table``, which has ``ON CONFLICT``."""
    dialect = session.get_bind().dialect.name
    return (sqlite_insert if dialect == "sqlite" else postgresql_insert)(table)


async def _ensure_row(session: AsyncSession, account_id: int, period: str) -> None:
    await session.execute(
        _insert(session, Credits)
        .values(account_id=account_id, period=period, used=0, reserved=0)
        .on_conflict_do_nothing(index_elements=["account_id", "period"])
    )


async def reserve(
    session: AsyncSession, account_id: int, period: str, count: int, limit: int
) -> bool:
    """Hold ``count`` credits of ``period`` if that keeps the account within
    ``limit``; ``False`` (nothing held) otherwise."""
    await _ensure_row(session, account_id, period)
    result = await session.execute(
        update(Credits)
        .where(
            Credits.account_id == account_id,
            Credits.period == period,
            Credits.used + Credits.reserved + count <= limit,
        )
        .values(reserved=Credits.reserved + count)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def settle(
    session: AsyncSession, account_id: int, period: str, *, charged: int, released: int
) -> None:
    """Of the credits held, charge ``charged`` and give back ``released``."""
    await session.execute(
        update(Credits)
        .where(Credits.account_id == account_id, Credits.period == period)
        .values(
            used=Credits.used + charged,
            reserved=Credits.reserved - charged - released,
        )
    )


def usage_bucket(moment: datetime) -> datetime:
    """The first instant of the 15 minutes of UTC time containing ``moment``."""
    step = int(USAGE_BUCKET.total_seconds())
    return datetime.fromtimestamp(int(moment.timestamp()) // step * step, UTC)


async def charge(
    session: AsyncSession,
    account_id: int,
    period: str,
    *,
    images: int,
    credits: int,
    at: datetime,
) -> None:
    """Charge ``credits`` held in ``period`` for ``images`` processed images, and count
    them in the account's usage of the 15 minutes containing ``at``."""
    await settle(session, account_id, period, charged=credits, released=0)
    counted = _insert(session, Usage).values(
        account_id=account_id, bucket=usage_bucket(at), credits=credits, images=images
    )
    await session.execute(
        counted.on_conflict_do_update(
            index_elements=[Usage.account_id, Usage.bucket],
            set_={
                Usage.credits: Usage.credits + counted.excluded.credits,
                Usage.images: Usage.images + counted.excluded.images,
            },
        )
    )


USED_AND_RESERVED = select(Credits.used, Credits.reserved).where(
    Credits.account_id == bindparam("account_id"), Credits.period == bindparam("period")
)


async def balance(reads: Reads, account_id: int, period: str, limit: int) -> Balance:
    """The account's credits in ``period`` out of ``limit``, read without a transaction."""
    found = await reads.first(
        USED_AND_RESERVED, partial(Balance, limit), account_id=account_id, period=period
    )
    return found if found is not None else Balance(total=limit, used=0, reserved=0)
