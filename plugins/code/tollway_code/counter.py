"""Counting the codes each account generates, for the usage report.

The code product keeps no record of its requests otherwise (the rate limiter's counts
are per window and expire), so each successful generation adds its codes to the
account's count of its 15 minutes of UTC time, in the process's memory: the request
pays a dict update, no database write. A flusher adds what the process counted to the
rows of :class:`~tollway_code.models.Generated` (one upsert per account and 15
minutes, in one transaction) every ``FLUSH_INTERVAL`` seconds, when the gateway stops,
and before the usage report reads them. A process killed loses at most its last
second of counts; a database outage keeps them in memory until a flush succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import Executable
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from tollway import Gateway, utcnow
from tollway_code.models import Generated

log = logging.getLogger("tollway.code")

BUCKET = timedelta(minutes=15)
FLUSH_INTERVAL = 1.0
"""Seconds between two flushes of the counts a process holds."""


def bucket_of(moment: datetime) -> datetime:
    """The first instant of the 15 minutes of UTC time containing ``moment``."""
    step = int(BUCKET.total_seconds())
    return datetime.fromtimestamp(int(moment.timestamp()) // step * step, UTC)


class GenerationCounter:
    """The gateway's count of generated codes (a service)."""

    def __init__(self, gateway: Gateway) -> None:
        self.database = gateway.database
        self.insert = sqlite_insert if gateway.database.is_sqlite else postgresql_insert
        self.clock: Callable[[], datetime] = utcnow
        """Now, as an aware UTC datetime; tests replace it to move time."""
        self._pending: dict[tuple[int, datetime], list[int]] = {}
        self._lock = asyncio.Lock()
        self._flusher: asyncio.Task[None] | None = None

    def count(self, account_id: int, *, qr: int = 0, barcodes: int = 0) -> None:
        """Add ``qr`` QR codes and ``barcodes`` barcodes to the account's 15 minutes."""
        counts = self._pending.setdefault((account_id, bucket_of(self.clock())), [0, 0])
        counts[0] += qr
        counts[1] += barcodes

    async def flush(self) -> None:
        """Write what this process counted; on failure keep it for the next flush."""
        async with self._lock:
            taken, self._pending = self._pending, {}
            if not taken:
                return
            try:
                async with self.database.transaction() as session:
                    await self.database.lock_for_writing(session)
                    for (account_id, bucket), (qr, barcodes) in sorted(taken.items()):
                        await session.execute(self._upsert(account_id, bucket, qr, barcodes))
            except BaseException:
                for key, (qr, barcodes) in taken.items():
                    counts = self._pending.setdefault(key, [0, 0])
                    counts[0] += qr
                    counts[1] += barcodes
                raise

    def _upsert(self, account_id: int, bucket: datetime, qr: int, barcodes: int) -> Executable:
        counted = self.insert(Generated).values(
            account_id=account_id, bucket=bucket, qr=qr, barcodes=barcodes
        )
        return counted.on_conflict_do_update(
            index_elements=[Generated.account_id, Generated.bucket],
            set_={
                Generated.qr: Generated.qr + counted.excluded.qr,
                Generated.barcodes: Generated.barcodes + counted.excluded.barcodes,
            },
        )

    async def start(self) -> None:
        self._flusher = asyncio.create_task(self._flush_every_interval())

    async def stop(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        try:
            await self.flush()
        except Exception:
            log.warning("code usage: the last counts could not be written", exc_info=True)

    async def _flush_every_interval(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_INTERVAL)
            try:
                await self.flush()
            except Exception:
                log.warning("code usage: counts kept for the next flush", exc_info=True)
