"""The analytics API's wire types (spec 2.4)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

Format = Literal["csv", "pdf"]
ExportStatus = Literal["pending", "ready", "failed"]


class ReportEntry(msgspec.Struct, frozen=True, kw_only=True):
    """A report of the catalog."""

    id: str
    name: str
    product: str
    description: str
    supports_date_range: bool
    supports_export: bool


class ReportList(msgspec.Struct, frozen=True, kw_only=True):
    data: list[ReportEntry]


class ReportResult(msgspec.Struct, frozen=True, kw_only=True):
    """A report's data: money in major units, dates as ``YYYY-MM-DD``."""

    report_id: str
    start_date: str
    end_date: str
    granularity: str
    tz: str
    currency: str | None
    """ISO 4217 code of the report's money values; ``null`` when it has none."""
    summary: dict[str, Any]
    series: list[dict[str, Any]]


class ExportRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    report_id: Annotated[str, msgspec.Meta(max_length=100)]
    format: Format
    start_date: Annotated[str, msgspec.Meta(max_length=10)] | None = None
    end_date: Annotated[str, msgspec.Meta(max_length=10)] | None = None
    granularity: Annotated[str, msgspec.Meta(max_length=16)] = "day"
    tz: Annotated[str, msgspec.Meta(max_length=64)] = "UTC"


class Export(msgspec.Struct, frozen=True, kw_only=True):
    """An export: ``ready`` with its download URL, or ``pending`` while a job makes it."""

    id: str
    report_id: str
    format: Format
    status: ExportStatus
    download_url: str | None
    """Signed, bound to the account, valid one hour (until ``expires_at``)."""
    expires_at: datetime | None
    file_size_bytes: int | None
    """The exact length of the file the URL serves."""
    created_at: datetime
