"""The analytics product's own report: its exports, per bucket and format."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from tollway import Column, Gateway, Period, Report, ReportData, day_of, in_period
from tollway_analytics.models import Export

EXPORTS_BY_DAY = (
    select(day_of(Export.created_at).label("day"), Export.format, func.count())
    .where(in_period(Export.account_id, Export.created_at))
    .group_by("day", Export.format)
)
"""The account's exports made in the period, per local day and format."""


def _row(*columns: Any) -> tuple[Any, ...]:
    return columns


async def exports(gateway: Gateway, period: Period) -> ReportData:
    days = period.days
    rows = await gateway.database.reads.all(EXPORTS_BY_DAY, _row, **days.params(period.account_id))
    by_format = (
        (day, n if kind == "csv" else 0, n if kind == "pdf" else 0) for day, kind, n in rows
    )
    series = period.series(by_format, ("csv", "pdf"), days)
    for item in series:
        item["exports"] = item["csv"] + item["pdf"]
    csv, pdf = sum(item["csv"] for item in series), sum(item["pdf"] for item in series)
    return ReportData(summary={"exports": csv + pdf, "csv": csv, "pdf": pdf}, series=series)


EXPORTS = Report(
    id="analytics.exports",
    name="Exports",
    description="Report exports made, per format.",
    compute=exports,
    summary=(Column("exports", "count"), Column("csv", "count"), Column("pdf", "count")),
    series=(Column("csv", "count"), Column("pdf", "count"), Column("exports", "count")),
)
