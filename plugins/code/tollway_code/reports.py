"""The code product's report: ``code.usage``, the codes generated per day, week or
month of the caller's calendar, QR codes and barcodes apart.

The database sums the counts (:class:`~tollway_code.models.Generated`, one row per
account and 15 minutes with a generation) by the caller's day, through the account's
rows of the range in the primary key ``(account_id, bucket)``. Requests that failed
(a 400, a refused batch) generated nothing and are not counted.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, String, bindparam, func, select

from tollway import Column, Gateway, Period, Report, ReportData, local_day, utc_instant
from tollway_code.counter import GenerationCounter
from tollway_code.models import Generated

# The account and the range are written into the SQL as numbers (see tollway_pos.reports:
# as parameters they would leave PostgreSQL a generic plan after five runs).
ACCOUNT = bindparam("account_id", type_=Integer, literal_execute=True)
START = bindparam("start", type_=Integer, literal_execute=True)
END = bindparam("end", type_=Integer, literal_execute=True)
SECONDS = bindparam("seconds", type_=Integer, literal_execute=True)

_DAYS = (
    select(
        local_day(Generated.bucket, bindparam("zone", type_=String), START, SECONDS).label("day"),
        Generated.qr,
        Generated.barcodes,
    )
    .where(
        Generated.account_id == ACCOUNT,
        Generated.bucket >= utc_instant(START),
        Generated.bucket < utc_instant(END),
    )
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


def _row(*columns: Any) -> tuple[Any, ...]:
    return columns


async def usage(gateway: Gateway, period: Period) -> ReportData:
    """The period's codes generated, in total and per bucket (this process's counts
    written first; another's reach the database within a second)."""
    await gateway.service(GenerationCounter).flush()
    days = period.days
    rows = await gateway.database.reads.all(
        GENERATED_BY_DAY, _row, **days.params(period.account_id)
    )
    names = [column.name for column in COLUMNS]
    series = period.series(rows, names, days)
    return ReportData(
        summary={name: sum(point[name] for point in series) for name in names}, series=series
    )


USAGE = Report(
    id="code.usage",
    name="Usage",
    description="QR codes and barcodes generated (a batch counts each of its codes)",
    compute=usage,
    summary=COLUMNS,
    series=COLUMNS,
)
