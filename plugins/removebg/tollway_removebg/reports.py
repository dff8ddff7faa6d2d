"""The background removal product's report: ``removebg.usage``, the credits charged
and the images processed per day, week or month of the caller's calendar.

The database sums the usage counts (:class:`~tollway_removebg.models.Usage`, one row
per account and 15 minutes with a charge) by the caller's day, through the account's
rows of the range in the primary key ``(account_id, bucket)``. Images that failed
were given their credits back and are in neither column.
"""

from __future__ import annotations

from sqlalchemy import func, select

from tollway import Column, Gateway, Period, Report, ReportData, day_of, in_period, summed_by_day
from tollway_removebg.models import Usage

_DAYS = (
    select(
        day_of(Usage.bucket).label("day"),
        Usage.credits,
        Usage.images,
    )
    .where(in_period(Usage.account_id, Usage.bucket))
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


async def usage(gateway: Gateway, period: Period) -> ReportData:
    """The period's credits charged and images processed, in total and per bucket."""
    return await summed_by_day(gateway, period, USAGE_BY_DAY, COLUMNS)


USAGE = Report(
    id="removebg.usage",
    name="Usage",
    description="Credits charged and images processed (failed images are not charged)",
    compute=usage,
    summary=COLUMNS,
    series=COLUMNS,
)
