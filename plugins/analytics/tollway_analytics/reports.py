"""The analytics product's own report: its exports, per bucket and format."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, String, bindparam, func, select

from tollway import Column, Gateway, Period, Report, ReportData, local_day, utc_instant
from tollway_analytics.models import Export

_START = bindparam("start", type_=Integer)
_END = bindparam("end", type_=Integer)
EXPORTS_BY_DAY = (
    select(
        local_day(
            Export.created_at,
            bindparam("zone", type_=String),
            _START,
            bindparam("seconds", type_=Integer),
        ).label("day"),
        Export.format,
        func.count(),
    )
    .where(
        Export.account_id == bindparam("account_id", type_=Integer),
        Export.created_at >= utc_instant(_START),
        Export.created_at < utc_instant(_END),
    )
    .group_by("day", Export.format)
)
"""The account's exports made from ``start`` to ``end``, per local day and format."""


def _row(*columns: Any) -> tuple[Any, ...]:
    return columns


async def exports(gateway: Gateway, period: Period) -> ReportData:
    days = period.days
    rows = await gateway.database.reads.all(EXPORTS_BY_DAY, _row, **days.params(period.account_id))
    series = period.series(
        (
            (day, count if kind == "csv" else 0, count if kind == "pdf" else 0)
            for day, kind, count in rows
        ),
        ("csv", "pdf"),
        days,
    )
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
