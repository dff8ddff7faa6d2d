"""The background removal product's report: ``removebg.usage``, the credits charged
and the images processed per day, week or month of the caller's calendar.

The database sums the usage counts (:class:`~tollway_removebg.models.Usage`, one row
per account and 15 minutes with a charge) by the caller's day, through the account's
rows of the range in the primary key ``(account_id, bucket)``. Images that failed
were given their credits back and are in neither column.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, String, bindparam, func, select

from tollway import Column, Gateway, Period, Report, ReportData, local_day, utc_instant
from tollway_removebg.models import Usage

# The account and the range are written into the SQL as numbers (see tollway_pos.reports:
# as parameters they would leave PostgreSQL a generic plan after five runs).
ACCOUNT = bindparam("account_id", type_=Integer, literal_execute=True)
START = bindparam("start", type_=Integer, literal_execute=True)
END = bindparam("end", type_=Integer, literal_execute=True)
SECONDS = bindparam("seconds", type_=Integer, literal_execute=True)

_DAYS = (
    select(
        local_day(Usage.bucket, bindparam("zone", type_=String), START, SECONDS).label("day"),
        Usage.credits,
        Usage.images,
    )
    .where(
        Usage.account_id == ACCOUNT,
        Usage.bucket >= utc_instant(START),
        Usage.bucket < utc_instant(END),
    )
    .subquery()
)
USAGE_BY_DAY = select(_DAYS.c.day, func.sum(_DAYS.c.credits), func.sum(_DAYS.c.images)).group_by(
    _DAYS.c.day
)
"""Credits charged and images processed per ``local_day``, from ``start`` to ``end``."""

COLUMNS = (
    Column("credits", "count", "Credits charged"),
    Column("images", "count", "Images processed"),
)


def _row(*columns: Any) -> tuple[Any, ...]:
    return columns


async def usage(gateway: Gateway, period: Period) -> ReportData:
    """The period's credits charged and images processed, in total and per bucket."""
    days = period.days
    rows = await gateway.database.reads.all(USAGE_BY_DAY, _row, **days.params(period.account_id))
    names = [column.name for column in COLUMNS]
    series = period.series(rows, names, days)
    return ReportData(
        summary={name: sum(point[name] for point in series) for name in names}, series=series
    )


USAGE = Report(
    id="removebg.usage",
    name="Usage",
    description="Credits charged and images processed (failed images are not charged)",
    compute=usage,
    summary=COLUMNS,
    series=COLUMNS,
)
