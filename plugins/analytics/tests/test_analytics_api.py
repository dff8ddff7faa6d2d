"""The analytics API: the catalog by subscription, a report's range and its refusals,
exports behind signed URLs valid exactly an hour, and long exports made by a job.

The report these tests read is the analytics product's own (``analytics.exports``):
its data is made through this same API, so every number is known to the test."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from pypdf import PdfReader

from tollway import Gateway, JobFunction, hookimpl
from tollway.testing import GatewayFactory, Tenant, gateway_client, tenant
from tollway_analytics.service import Analytics

BASE = "http://testserver"
ALL_SCOPES = ("analytics:reports:read", "analytics:reports:export")


@dataclass
class RecordingQueue:
    """A job queue that keeps what is enqueued until the test runs it."""

    functions: dict[str, JobFunction] = field(default_factory=dict)
    waiting: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def register(self, name: str, function: JobFunction) -> None:
        self.functions[name] = function

    async def enqueue(self, name: str, /, **kwargs: Any) -> None:
        self.waiting.append((name, kwargs))

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def run_all(self) -> list[str]:
        """Run every waiting job; their names, in order."""
        ran = []
        while self.waiting:
            name, kwargs = self.waiting.pop(0)
            await self.functions[name](**kwargs)
            ran.append(name)
        return ran


class QueuePlugin:
    def __init__(self) -> None:
        self.queue = RecordingQueue()

    @hookimpl
    def tollway_job_queue(self, gateway: Gateway) -> RecordingQueue:
        return self.queue


@dataclass
class Setup:
    gateway: Gateway
    client: httpx.AsyncClient
    owner: Tenant
    other: Tenant
    queue: RecordingQueue

    @property
    def analytics(self) -> Analytics:
        return self.gateway.service(Analytics)

    async def call(
        self, method: str, path: str, *, expect: int = 200, by: Tenant | None = None, **kw: Any
    ) -> Any:
        response = await self.client.request(
            method, f"/v1/analytics{path}", headers=(by or self.owner).headers, **kw
        )
        assert response.status_code == expect, (path, response.status_code, response.text)
        return response.json()

    async def export(self, expect: int = 200, **body: Any) -> dict[str, Any]:
        sent = {"report_id": "analytics.exports", "format": "csv", **body}
        result: dict[str, Any] = await self.call(
            "POST", "/reports/export", json=sent, expect=expect
        )
        return result


@asynccontextmanager
async def opened(gateway_factory: GatewayFactory) -> AsyncIterator[Setup]:
    """A gateway serving analytics and short links (whose reports acme cannot read),
    its job queue recording, and two accounts on the free analytics plan."""
    plugin = QueuePlugin()
    gateway = await gateway_factory(
        plugins=["analytics", "link"],
        extra_plugins=[("recording-queue", plugin)],
        products={"analytics": {"settings": {"inline_export_max_rows": 40}}},
    )
    plans = {"analytics": "free"}
    owner = await tenant(gateway, "acme", plans=plans, scopes=ALL_SCOPES)
    other = await tenant(gateway, "globex", plans=plans, scopes=ALL_SCOPES)
    async with gateway_client(gateway) as client:
        yield Setup(gateway, client, owner, other, plugin.queue)


async def test_the_catalog_lists_the_reports_of_subscribed_products(
    gateway_factory: GatewayFactory,
) -> None:
    async with opened(gateway_factory) as setup:
        listed = await setup.call("GET", "/reports")
        ids = [entry["id"] for entry in listed["data"]]
        # link is installed, but acme does not subscribe to it.
        assert ids == ["analytics.exports"]
        assert listed["data"][0] == {
            "id": "analytics.exports",
            "name": "Exports",
            "product": "analytics",
            "description": "Report exports made, per format.",
            "supports_date_range": True,
            "supports_export": True,
        }


async def test_unknown_reports_are_404_and_unsubscribed_ones_403(
    gateway_factory: GatewayFactory,
) -> None:
    async with opened(gateway_factory) as setup:
        missing = await setup.call("GET", "/reports/pos.nothing", expect=404)
        assert "No report 'pos.nothing'" in missing["detail"]
        refused = await setup.call("GET", "/reports/link.clicks", expect=403)
        assert refused == {"detail": "Report 'link.clicks' needs an active subscription to 'link'"}
        await setup.call(
            "POST",
            "/reports/export",
            json={"report_id": "link.clicks", "format": "csv"},
            expect=403,
        )


@pytest.mark.parametrize(
    ("params", "detail"),
    [
        ({"start_date": "2026-03-02", "end_date": "2026-03-01"}, "end_date is before start_date"),
        ({"start_date": "2026-01-01", "end_date": "2026-04-04"}, "covers at most 93 days"),
        ({"granularity": "year"}, "granularity must be one of day, week, month"),
        ({"tz": "Mars/Olympus"}, "Unknown time zone 'Mars/Olympus'"),
        ({"start_date": "2026-02-30"}, "start_date must be a date as YYYY-MM-DD"),
        ({"end_date": "20260101"}, "end_date must be a date as YYYY-MM-DD"),
        ({"start_date": "9999-12-30", "end_date": "9999-12-31"}, "must be from 1900-01-01"),
        ({"start_date": "0001-01-01", "end_date": "0001-01-02"}, "must be from 1900-01-01"),
        ({"tz": "localtime"}, "Unknown time zone 'localtime'"),
        ({"tz": "../../etc/passwd"}, "Unknown time zone"),
    ],
)
async def test_invalid_ranges_are_422(
    gateway_factory: GatewayFactory, params: dict[str, str], detail: str
) -> None:
    async with opened(gateway_factory) as setup:
        refused = await setup.call("GET", "/reports/analytics.exports", params=params, expect=422)
        assert detail in refused["detail"]


async def test_the_longest_range_of_the_plan_is_served(gateway_factory: GatewayFactory) -> None:
    async with opened(gateway_factory) as setup:
        # 93 days, the free plan's most (2026-01-02 to 2026-04-04, both included).
        served = await setup.call(
            "GET",
            "/reports/analytics.exports",
            params={"start_date": "2026-01-02", "end_date": "2026-04-04", "granularity": "month"},
        )
        assert [item["date"] for item in served["series"]] == [
            "2026-01-01",
            "2026-02-01",
            "2026-03-01",
            "2026-04-01",
        ]


async def test_defaults_and_every_bucket_present(gateway_factory: GatewayFactory) -> None:
    async with opened(gateway_factory) as setup:
        today = datetime.now(UTC).date()
        served = await setup.call("GET", "/reports/analytics.exports")
        assert served["start_date"] == (today - timedelta(days=30)).isoformat()
        assert served["end_date"] == today.isoformat()
        assert served["granularity"] == "day"
        assert served["tz"] == "UTC"
        assert len(served["series"]) == 31
        assert all(item["exports"] == 0 for item in served["series"])
        weeks = await setup.call(
            "GET",
            "/reports/analytics.exports",
            params={"start_date": "2026-03-04", "end_date": "2026-03-20", "granularity": "week"},
        )
        # ISO weeks from Monday: the first bucket is dated before the range starts.
        assert [item["date"] for item in weeks["series"]] == [
            "2026-03-02",
            "2026-03-09",
            "2026-03-16",
        ]


async def test_exports_are_counted_by_the_report_and_agree_across_formats(
    gateway_factory: GatewayFactory,
) -> None:
    async with opened(gateway_factory) as setup:
        today = datetime.now(UTC).date().isoformat()
        for fmt in ("csv", "csv", "pdf"):
            await setup.export(format=fmt)
        # globex's export is not acme's.
        await setup.call(
            "POST",
            "/reports/export",
            json={"report_id": "analytics.exports", "format": "csv"},
            by=setup.other,
        )
        params = {"start_date": today, "end_date": today}
        served = await setup.call("GET", "/reports/analytics.exports", params=params)
        assert served["summary"] == {"exports": 3, "csv": 2, "pdf": 1}
        assert served["series"] == [{"date": today, "csv": 2, "pdf": 1, "exports": 3}]

        made = await setup.export(format="csv", start_date=today, end_date=today)
        downloaded = await setup.client.get(made["download_url"].removeprefix(BASE))
        assert downloaded.status_code == 200
        assert len(downloaded.content) == made["file_size_bytes"]
        assert downloaded.headers["content-type"] == "text/csv; charset=utf-8"
        rows = list(csv.DictReader(io.StringIO(downloaded.content.decode("utf-8"))))
        # An export's file is rendered before the export is stored: it counts the 3 before.
        assert rows == [{"date": today, "csv": "2", "pdf": "1", "exports": "3"}]

        made = await setup.export(format="pdf", start_date=today, end_date=today)
        downloaded = await setup.client.get(made["download_url"].removeprefix(BASE))
        assert downloaded.headers["content-type"] == "application/pdf"
        assert len(downloaded.content) == made["file_size_bytes"]
        text = "\n".join(
            page.extract_text() for page in PdfReader(io.BytesIO(downloaded.content)).pages
        )
        assert "Exports" in text
        assert today in text
        # 4 exports before this one: 3 CSV (one the download above) and 1 PDF.
        assert "4" in text


async def test_a_download_url_works_exactly_one_hour_for_its_account(
    gateway_factory: GatewayFactory,
) -> None:
    async with opened(gateway_factory) as setup:
        made = await setup.export()
        created = datetime.fromisoformat(made["created_at"])
        expires = datetime.fromisoformat(made["expires_at"])
        assert expires - created == timedelta(hours=1)
        path = made["download_url"].removeprefix(BASE)
        assert path.startswith("/v1/analytics/downloads/")
        analytics = setup.analytics
        real_clock = analytics.clock
        try:
            analytics.clock = lambda: expires - timedelta(seconds=1)
            assert (await setup.client.get(path)).status_code == 200
            analytics.clock = lambda: expires
            late = await setup.client.get(path)
            assert late.status_code == 403
            assert late.json() == {"detail": "This download URL has expired: make a new export"}
        finally:
            analytics.clock = real_clock
        token = path.rsplit("/", 1)[1]
        export_id, account, expiry, signature = token.split(".")
        tampered = [
            f"{export_id}.{setup.other.account_id}.{expiry}.{signature}",  # another account
            f"{export_id}.{account}.{int(expiry) + 3600}.{signature}",  # a later expiry
            f"{export_id}.{account}.{expiry}.{signature[:-2]}AA",  # the signature
            "exp_nothing.1.99999999999.abc",
            "not-a-token",
        ]
        for bad in tampered:
            answer = await setup.client.get(f"/v1/analytics/downloads/{bad}")
            assert answer.status_code == 403, bad
            assert answer.json() == {"detail": "This is not a valid download URL"}


async def test_a_long_export_is_made_by_a_job(gateway_factory: GatewayFactory) -> None:
    async with opened(gateway_factory) as setup:
        # 41 days by day is more than the 40 rows this gateway makes in a request.
        asked = {"start_date": "2026-01-01", "end_date": "2026-02-10", "format": "pdf"}
        pending = await setup.export(expect=202, **asked)
        assert pending["status"] == "pending"
        assert pending["download_url"] is None
        assert pending["file_size_bytes"] is None
        status = await setup.call("GET", f"/exports/{pending['id']}")
        assert status["status"] == "pending"
        assert (await setup.queue.run_all()).count("analytics.export") == 1
        ready = await setup.call("GET", f"/exports/{pending['id']}")
        assert ready["status"] == "ready"
        downloaded = await setup.client.get(ready["download_url"].removeprefix(BASE))
        assert downloaded.status_code == 200
        assert len(downloaded.content) == ready["file_size_bytes"]
        assert downloaded.content.startswith(b"%PDF-")
        # By week, the same range is 7 rows: made in the request.
        assert (await setup.export(granularity="week", **asked))["status"] == "ready"
        # Another account's export is not found.
        await setup.call("GET", f"/exports/{pending['id']}", by=setup.other, expect=404)
