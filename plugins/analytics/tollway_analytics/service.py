"""The analytics product's rules: which reports an account sees, the period a request
asks for, and exports kept for an hour behind signed URLs.

The reports themselves belong to the products that registered them
(:func:`tollway.hookspecs.tollway_register_reports`); this service finds the one asked
for, checks the caller may read it (its product subscribed, the range within the
analytics plan's ``max_report_days``), and calls it.

A download URL is ``<base>/v1/analytics/downloads/<id>.<account>.<expires>.<signature>``:
the signature is an HMAC-SHA256 of the export's id, its account and the epoch second
the URL stops working, under the deployment's download secret. The download route
needs no key (the URL is the credential) and loads the export by id *and* account, so
a URL only ever serves the account it was made for; anything not signed by this
deployment, or past its second, is 403. Exports are deleted an hour after they expire.

An export whose series has more than ``inline_export_max_rows`` rows is made by the job
``analytics.export`` on the gateway's job queue: the request answers ``pending`` at once
and ``GET /v1/analytics/exports/{id}`` says when its URL is ready.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from sqlalchemy import bindparam, delete, literal_column, select, table, update

from tollway import (
    GRANULARITIES,
    AnySelect,
    Caller,
    Forbidden,
    Gateway,
    NotFound,
    Period,
    PublicOrigin,
    Report,
    ReportData,
    UnprocessableEntity,
    deployment_secret,
    shown,
    signature,
)
from tollway_analytics import schemas
from tollway_analytics.exports import csv_bytes, pdf_bytes
from tollway_analytics.models import Export
from tollway_analytics.product import MAX_REPORT_DAYS, PRODUCT
from tollway_analytics.settings import AnalyticsSettings

log = logging.getLogger("tollway.analytics")

JOB = "analytics.export"
SECRET_NAME = "analytics.downloads"
DOWNLOADS_PATH = f"{PRODUCT.prefix}/downloads/"
URL_LIFETIME = timedelta(hours=1)
"""How long a download URL works: exactly an hour (spec 8)."""
DEFAULT_DAYS = 30
"""Without ``start_date``, a report starts this many days before its end."""
MEDIA_TYPES = {"csv": "text/csv", "pdf": "application/pdf"}
"""(Litestar adds ``; charset=utf-8`` to the CSV's.)"""
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
FIRST_DAY = date(1900, 1, 1)
LAST_DAY = date(2999, 12, 31)
"""The days a report may cover: any business's, far from the calendar's ends (a day
of year 9999 has no next midnight, one of year 1 no instant in every zone)."""
_PURGE_INTERVAL = timedelta(minutes=10)


_ZONES = frozenset(available_timezones()) - {"localtime", "Factory"}
"""IANA zones by name: not ``localtime`` (whatever the server's is), nor ``Factory``."""
_PG_ZONE: AnySelect = (
    select(literal_column("1"))
    .select_from(table("pg_timezone_names"))
    .where(literal_column("name") == bindparam("name"))
)


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; 422 for one ``zoneinfo`` does not know."""
    if name in _ZONES:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    raise UnprocessableEntity(f"Unknown time zone {name!r}: tz must be an IANA zone")


def _day(value: str, name: str) -> date:
    """``value`` as a date of :data:`FIRST_DAY` to :data:`LAST_DAY`; 422 otherwise."""
    if _DATE.fullmatch(value):
        try:
            day = date.fromisoformat(value)
        except ValueError:
            pass
        else:
            if FIRST_DAY <= day <= LAST_DAY:
                return day
            raise UnprocessableEntity(
                f"{name} must be from {FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}"
            )
    raise UnprocessableEntity(f"{name} must be a date as YYYY-MM-DD, not {value!r}")


@dataclass(frozen=True, slots=True)
class Asked:
    """What a request asks of a report, as sent (``None``: the default)."""

    start_date: str | None
    end_date: str | None
    granularity: str
    tz: str


@dataclass(frozen=True, slots=True)
class Signer:
    secret: bytes

    def signature(self, export_id: str, account_id: int, expires: int) -> str:
        return signature(self.secret, export_id, account_id, expires)

    def token(self, export_id: str, account_id: int, expires_at: datetime) -> str:
        expires = int(expires_at.timestamp())
        signed = self.signature(export_id, account_id, expires)
        return f"{export_id}.{account_id}.{expires}.{signed}"

    def verify(self, token: str, now: datetime) -> tuple[str, int]:
        """The export and account a genuine, unexpired ``token`` names; 403 otherwise."""
        parts = token.split(".")
        if (
            len(parts) == 4
            and parts[1].isdigit()
            and len(parts[1]) <= 12
            and parts[2].isdigit()
            and len(parts[2]) <= 12
        ):
            export_id, account_id, expires = parts[0], int(parts[1]), int(parts[2])
            expected = self.signature(export_id, account_id, expires)
            if hmac.compare_digest(parts[3], expected):
                if now.timestamp() >= expires:
                    raise Forbidden("This download URL has expired: make a new export")
                return export_id, account_id
        raise Forbidden("This is not a valid download URL")


_EXPORT = select(
    Export.id,
    Export.account_id,
    Export.report_id,
    Export.format,
    Export.status,
    Export.file_size_bytes,
    Export.created_at,
    Export.expires_at,
).where(Export.id == bindparam("id"), Export.account_id == bindparam("account_id"))
_DOWNLOAD = select(Export.format, Export.report_id, Export.content).where(
    Export.id == bindparam("id"),
    Export.account_id == bindparam("account_id"),
    Export.status == "ready",
)


@dataclass(frozen=True, slots=True)
class _Row:
    """An export as :data:`_EXPORT` reads it (the stored :class:`Export` has these too)."""

    id: str
    account_id: int
    report_id: str
    format: str
    status: str
    file_size_bytes: int | None
    created_at: datetime
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class Download:
    """A file as its download URL serves it."""

    media_type: str
    filename: str
    content: bytes


def _download(format: str, report_id: str, content: bytes | None) -> Download:
    return Download(MEDIA_TYPES[format], f"{report_id}.{format}", content or b"")


class Analytics:
    """The analytics product, one per gateway (the ``analytics`` dependency)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.settings = gateway.product_settings(AnalyticsSettings)
        self.database = gateway.database
        self.origin = PublicOrigin(gateway.settings.trusted_proxies)
        self.clock: Callable[[], datetime] = lambda: datetime.now(UTC)
        self._signer: Signer | None = None
        self._last_purge: datetime | None = None
        self._zones_checked: set[str] = set()

    # The catalog and one report -------------------------------------------------------

    def catalog(self, caller: Caller) -> schemas.ReportList:
        """The reports of the products the caller's account subscribes to, by id."""
        subscribed = caller.principal.plans
        return schemas.ReportList(
            data=[
                schemas.ReportEntry(
                    id=report.id,
                    name=report.name,
                    product=report.product,
                    description=report.description,
                    supports_date_range=report.supports_date_range,
                    supports_export=report.supports_export,
                )
                for report in sorted(self.gateway.registry.reports.values(), key=_by_id)
                if report.product in subscribed
            ]
        )

    def report(self, caller: Caller, report_id: str) -> Report:
        """The report ``report_id``: 404 when no product registered it, 403 when the
        caller's account does not subscribe to its product."""
        report = self.gateway.registry.reports.get(report_id)
        if report is None:
            raise NotFound(f"No report {report_id!r}: GET {PRODUCT.prefix}/reports lists them")
        if report.product not in caller.principal.plans:
            raise Forbidden(
                f"Report {report_id!r} needs an active subscription to {report.product!r}"
            )
        return report

    def period(self, caller: Caller, asked: Asked) -> Period:
        """The period asked for: ``end_date`` defaults to today in ``tz``,
        ``start_date`` to 30 days before the end; 422 for an unknown zone or
        granularity, a malformed date, an end before the start or a range longer than
        the analytics plan's ``max_report_days``."""
        tz = zone(asked.tz)
        if asked.granularity not in GRANULARITIES:
            raise UnprocessableEntity(
                f"granularity must be one of {', '.join(GRANULARITIES)}, not {asked.granularity!r}"
            )
        end = (
            _day(asked.end_date, "end_date")
            if asked.end_date is not None
            else self.clock().astimezone(tz).date()
        )
        start = (
            _day(asked.start_date, "start_date")
            if asked.start_date is not None
            else end - timedelta(days=DEFAULT_DAYS)
        )
        if end < start:
            raise UnprocessableEntity("end_date is before start_date")
        most = caller.plan.limits.get(MAX_REPORT_DAYS)
        if most is not None and (end - start).days + 1 > most:
            raise UnprocessableEntity(
                f"A report on the {caller.plan.name} plan covers at most {most} days; "
                f"this range has {(end - start).days + 1}"
            )
        granularity = asked.granularity
        assert granularity in GRANULARITIES  # for the type checker: checked above
        return Period(caller.principal.account_id, start, end, granularity, tz)

    async def known_to_the_database(self, period: Period) -> Period:
        """``period``, once PostgreSQL (whose zone data may be older than Python's) has
        said it knows the period's zone; 422 if it does not. Asked once per zone."""
        key = period.zone.key
        if self.database.is_sqlite or key in self._zones_checked:
            return period
        if await self.database.reads.scalar(_PG_ZONE, name=key) is None:
            raise UnprocessableEntity(f"Unknown time zone {key!r}: the database has no such zone")
        self._zones_checked.add(key)
        return period

    async def run(self, caller: Caller, report_id: str, asked: Asked) -> schemas.ReportResult:
        report = self.report(caller, report_id)
        period = await self.known_to_the_database(self.period(caller, asked))
        return result_of(report, period, await report.compute(self.gateway, period))

    # Exports -------------------------------------------------------------------------

    async def export(
        self, caller: Caller, request: schemas.ExportRequest, base_url: str
    ) -> schemas.Export:
        """Make the export now, or leave it to a job when its series is long."""
        report = self.report(caller, request.report_id)
        if not report.supports_export:
            raise UnprocessableEntity(f"Report {report.id!r} cannot be exported")
        asked = Asked(request.start_date, request.end_date, request.granularity, request.tz)
        period = await self.known_to_the_database(self.period(caller, asked))
        await self.purge()
        now = self.clock()
        row = Export(
            id=f"exp_{secrets.token_hex(16)}",
            account_id=period.account_id,
            report_id=report.id,
            format=request.format,
            status="pending",
            start_date=period.start.isoformat(),
            end_date=period.end.isoformat(),
            granularity=period.granularity,
            tz=period.zone.key,
            created_at=now,
        )
        if len(period.buckets()) > self.settings.inline_export_max_rows:
            async with self.database.transaction() as session:
                session.add(row)
            await self.gateway.jobs.enqueue(JOB, export_id=row.id)
            return await self._shown(row, base_url)
        content = await self._render(report, period, request.format)
        row.status = "ready"
        row.content = content
        row.file_size_bytes = len(content)
        row.expires_at = now + URL_LIFETIME
        async with self.database.transaction() as session:
            session.add(row)
        return await self._shown(row, base_url)

    async def make(self, export_id: str) -> None:
        """The job: render a pending export and keep its file (or why it failed). The
        rendering holds no transaction; the result is kept only while still pending."""
        async with self.database.transaction() as session:
            row = await session.get(Export, export_id)
        if row is None or row.status != "pending":
            return
        report = self.gateway.registry.reports.get(row.report_id)
        made: dict[str, Any]
        try:
            if report is None:
                raise LookupError(f"report {row.report_id!r} is no longer installed")
            period = Period(
                row.account_id,
                date.fromisoformat(row.start_date),
                date.fromisoformat(row.end_date),
                row.granularity,  # type: ignore[arg-type]  # stored checked
                ZoneInfo(row.tz),
            )
            content = await self._render(report, period, row.format)
        except Exception as error:
            log.exception("analytics export %s failed", export_id)
            made = {"status": "failed", "error": str(error)[:500]}
        else:
            made = {
                "status": "ready",
                "content": content,
                "file_size_bytes": len(content),
                "expires_at": self.clock() + URL_LIFETIME,
            }
        async with self.database.transaction() as session:
            await session.execute(
                update(Export)
                .where(Export.id == export_id, Export.status == "pending")
                .values(**made)
            )

    async def status(self, account_id: int, export_id: str, base_url: str) -> schemas.Export:
        row = await self.database.reads.first(_EXPORT, _Row, id=export_id, account_id=account_id)
        if row is None:
            raise NotFound(f"No export {export_id!r}")
        return await self._shown(row, base_url)

    async def download(self, token: str) -> Download:
        """The file a download URL names: 403 unless genuine, unexpired and ready."""
        signer = await self.signer()
        export_id, account_id = signer.verify(token, self.clock())
        found = await self.database.reads.first(
            _DOWNLOAD, _download, id=export_id, account_id=account_id
        )
        if found is None:
            raise Forbidden("This download URL has expired: make a new export")
        return found

    async def purge(self) -> None:
        """Delete exports an hour past their URL's end (at most every ten minutes)."""
        now = self.clock()
        if self._last_purge is not None and now - self._last_purge < _PURGE_INTERVAL:
            return
        self._last_purge = now
        async with self.database.transaction() as session:
            await session.execute(delete(Export).where(Export.expires_at < now - URL_LIFETIME))
            # A pending export whose job was lost with its process is failed after a day.
            await session.execute(
                update(Export)
                .where(Export.status == "pending", Export.created_at < now - timedelta(days=1))
                .values(status="failed", error="its job never ran")
            )

    # Shared steps ----------------------------------------------------------------------

    def base_url(self, scope: Any) -> str:
        """``public_url``, else the origin the request reached (never its ``Host``)."""
        return (self.settings.public_url or self.origin.of(scope)).rstrip("/")

    async def signer(self) -> Signer:
        if self._signer is None:
            secret = self.settings.download_secret or await deployment_secret(
                self.database, SECRET_NAME
            )
            self._signer = Signer(secret.encode())
        return self._signer

    async def _render(self, report: Report, period: Period, format: str) -> bytes:
        """The file: computed on the loop, rendered in a thread (a year's PDF takes a
        quarter of a second of fpdf2, which would hold up every other request)."""
        data = await report.compute(self.gateway, period)
        render = csv_bytes if format == "csv" else pdf_bytes
        return await asyncio.to_thread(render, report, data, period)

    async def _shown(self, row: _Row | Export, base_url: str) -> schemas.Export:
        url = None
        if row.status == "ready" and row.expires_at is not None:
            signer = await self.signer()
            token = signer.token(row.id, row.account_id, row.expires_at)
            url = f"{base_url}{DOWNLOADS_PATH}{token}"
        return schemas.Export(
            id=row.id,
            report_id=row.report_id,
            format=row.format,  # type: ignore[arg-type]  # stored checked
            status=row.status,  # type: ignore[arg-type]
            download_url=url,
            expires_at=row.expires_at,
            file_size_bytes=row.file_size_bytes,
            created_at=row.created_at,
        )


def result_of(report: Report, period: Period, data: ReportData) -> schemas.ReportResult:
    """A report's data as the API shows it."""
    return schemas.ReportResult(
        report_id=report.id,
        start_date=period.start.isoformat(),
        end_date=period.end.isoformat(),
        granularity=period.granularity,
        tz=period.zone.key,
        currency=data.currency,
        summary=shown(report.summary, data.summary, data.currency),
        series=[shown(report.series, item, data.currency) for item in data.series],
    )


def _by_id(report: Report) -> str:
    return report.id
