"""The code product's report: ``code.usage``, the codes generated per day, week or
month of the caller's calendar, QR codes and barcodes apart.

The database sums the counts (:class:`~tollway_code.models.Generated`, one row per
account and 15 minutes with a generation) by the caller's day, through the account's
rows of the range in the primary key ``(account_id, bucket)``. Requests that failed
(a 400, a refused batch) generated nothing and are not counted.
"""

from __future__ import annotations

from sqlalchemy import func, select

from tollway import Column, Gateway, Period, Report, ReportData, day_of, in_period, summed_by_day
from tollway_code.counter import GenerationCounter
from tollway_code.models import Generated

_DAYS = (
    select(
        day_of(Generated.bucket).label("day"),
        Generated.qr,
        Generated.barcodes,
    )
    .where(in_period(Generated.account_id, Generated.bucket))
    .subquery()
)
GENERATED_BY_DAY = select(
    _DAYS.c.day,
    func.sum(_DAYS.c.qr + _DAYS.c.barcodes),
    func.sum(_DAYS.c.qr),
    func.sum(_DAYS.c.barcodes),
).group_by(_DAYS.c.day)
"""Codes generated, QR codes and barcodes per ``local_day``, from ``start`` to ``end``."""

COLUMNS = (
    Column("generated", "count", "Codes generated"),
    Column("qr", "count", "QR codes"),
    Column("barcodes", "count", "Barcodes"),
)


async def usage(gateway: Gateway, period: Period) -> ReportData:
    """The period's codes generated, in total and per bucket (this process's counts
    written first; another's reach the database within a second)."""
    await gateway.service(GenerationCounter).flush()
    return await summed_by_day(gateway, period, GENERATED_BY_DAY, COLUMNS)


USAGE = Report(
    id="code.usage",
    name="Usage",
    description="QR codes and barcodes generated (a batch counts each of its codes)",
    compute=usage,
    summary=COLUMNS,
    series=COLUMNS,
)
