"""``/v1/analytics``: the report catalog, a report's data, exports and their downloads."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, PathParameter, QueryParameter

from tollway import CurrentCaller
from tollway_analytics import schemas
from tollway_analytics.product import REPORTS_EXPORT, REPORTS_READ
from tollway_analytics.service import Analytics, Asked

ReportId = Annotated[str, PathParameter(max_length=100, description="``<product>.<report_name>``.")]
DateParameter = Annotated[str | None, QueryParameter(description="A day as YYYY-MM-DD (included).")]
Granularity = Annotated[
    str, QueryParameter(max_length=16, description="The series' step: day, week or month.")
]
TimeZone = Annotated[
    str, QueryParameter(max_length=64, description="The IANA time zone days are counted in.")
]


@get("/reports", scope=REPORTS_READ)
async def list_reports(
    caller: CurrentCaller, analytics: NamedDependency[Analytics]
) -> schemas.ReportList:
    """The reports of the products the account subscribes to, by id."""
    return analytics.catalog(caller)


@get("/reports/{report_id:str}", scope=REPORTS_READ)
async def get_report(
    report_id: ReportId,
    caller: CurrentCaller,
    analytics: NamedDependency[Analytics],
    start_date: DateParameter = None,
    end_date: DateParameter = None,
    granularity: Granularity = "day",
    tz: TimeZone = "UTC",
) -> schemas.ReportResult:
    """The report's summary and series over ``start_date`` to ``end_date`` (default:
    the 30 days before today, and today, in ``tz``), one item per day, ISO week (from
    Monday) or month, empty ones included."""
    return await analytics.run(caller, report_id, Asked(start_date, end_date, granularity, tz))


@post("/reports/export", scope=REPORTS_EXPORT, status_code=200)
async def export_report(
    request: Request[Any, Any, Any],
    data: JSONBody[schemas.ExportRequest],
    caller: CurrentCaller,
    analytics: NamedDependency[Analytics],
) -> Response[schemas.Export]:
    """200 with the download URL, valid one hour; 202 ``pending`` when the export is long
    enough to be made by a job (poll ``GET /v1/analytics/exports/{id}``)."""
    export = await analytics.export(caller, data, analytics.base_url(request.scope))
    return Response(export, status_code=200 if export.status == "ready" else 202)


@get("/exports/{export_id:str}", scope=REPORTS_EXPORT)
async def get_export(
    request: Request[Any, Any, Any],
    export_id: Annotated[str, PathParameter(max_length=40)],
    caller: CurrentCaller,
    analytics: NamedDependency[Analytics],
) -> schemas.Export:
    """An export's status, and its download URL once ready."""
    return await analytics.status(
        caller.principal.account_id, export_id, analytics.base_url(request.scope)
    )


@get("/downloads/{token:str}", public=True, media_type="text/csv")
async def download_export(
    token: FromPath[str], analytics: NamedDependency[Analytics]
) -> Response[bytes]:
    """An export's file at its signed URL (no key: the URL is the credential)."""
    found = await analytics.download(token)
    return Response(
        found.content,
        media_type=found.media_type,
        headers={
            "Content-Disposition": f'attachment; filename="{found.filename}"',
            "Cache-Control": "private, no-store",
        },
    )


ROUTES = [list_reports, get_report, export_report, get_export, download_export]
