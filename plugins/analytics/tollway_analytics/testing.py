"""For a product's tests: read one of its reports the three ways the analytics API
gives it (JSON, the CSV export, the PDF export), so a test can check that the numbers
it seeded through the product's own API are the same in each.

A pytest plugin (entry point ``pytest11``) so that its imports are the distribution's
``test`` extra (httpx, pypdf); it adds no hooks or fixtures, only these helpers."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import httpx

from tollway import Gateway, Report, ReportData, decimal_text
from tollway.billing import major

PREFIX = "/v1/analytics"


@dataclass(frozen=True)
class Exported:
    """A report as JSON, as CSV rows (dicts of text) and as the PDF's text lines."""

    json: dict[str, Any]
    csv: list[dict[str, str]]
    pdf_lines: list[str]
    csv_size: int
    pdf_size: int


async def read_three_ways(
    client: httpx.AsyncClient, headers: dict[str, str], report_id: str, params: dict[str, str]
) -> Exported:
    """``report_id`` with ``params`` (start_date, end_date, granularity, tz) through the
    API, and exported as CSV and as PDF, each file downloaded from its URL (no key);
    every answer must succeed and each file be ``file_size_bytes`` long."""
    from pypdf import PdfReader

    answer = await client.get(f"{PREFIX}/reports/{report_id}", params=params, headers=headers)
    assert answer.status_code == 200, answer.text
    files: dict[str, bytes] = {}
    for format in ("csv", "pdf"):
        body = {"report_id": report_id, "format": format, **params}
        made = await client.post(f"{PREFIX}/reports/export", json=body, headers=headers)
        assert made.status_code == 200, made.text
        export = made.json()
        url = httpx.URL(export["download_url"])
        downloaded = await client.get(url.raw_path.decode())
        assert downloaded.status_code == 200, downloaded.text
        assert len(downloaded.content) == export["file_size_bytes"]
        files[format] = downloaded.content
    rows = list(csv.DictReader(io.StringIO(files["csv"].decode("utf-8"), newline="")))
    reader = PdfReader(io.BytesIO(files["pdf"]))
    lines = [line for page in reader.pages for line in page.extract_text().splitlines()]
    return Exported(answer.json(), rows, lines, len(files["csv"]), len(files["pdf"]))


def assert_agrees(read: Exported, report: Report, expected: ReportData) -> None:
    """Check that the three ways give the numbers of ``expected`` (what the report's
    function computes for the same period, or what the test worked out): the JSON's
    series and summary, each CSV row (money in cents and as a decimal) and, for
    reports without durations, each row of the PDF's table."""
    currency = expected.currency
    assert read.json["currency"] == currency
    assert len(read.json["series"]) == len(read.csv) == len(expected.series)
    table = {line.split()[0]: line.split()[1:] for line in read.pdf_lines if _dated(line)}
    durations = any(column.kind == "seconds" for column in report.series)
    for shown, row, item in zip(read.json["series"], read.csv, expected.series, strict=True):
        day = item["date"].isoformat()
        assert shown["date"] == row["date"] == day
        printed = []
        for column in report.series:
            value = item[column.name]
            if column.kind == "money":
                assert shown[column.name] == major(value, currency or "usd"), (day, column)
                assert row[f"{column.name}_cents"] == str(value), (day, column)
                assert row[column.name] == decimal_text(value, currency), (day, column)
                printed.append(decimal_text(value, currency))
            else:
                assert shown[column.name] == value, (day, column)
                assert row[column.name] == ("" if value is None else str(value)), (day, column)
                printed.append("\u2013" if value is None else f"{value:,}")
        if not durations:
            assert table[day] == printed, day
    for column in report.summary:
        value = expected.summary[column.name]
        if column.kind == "money":
            value = major(value, currency or "usd")
        assert read.json["summary"][column.name] == value, column


def _dated(line: str) -> bool:
    head = line.split()[0] if line.split() else ""
    return len(head) == 10 and head[4] == head[7] == "-" and head[:4].isdigit()


async def analytics_key(gateway: Gateway, account_id: int, plan: str = "pro") -> dict[str, str]:
    """Subscribe ``account_id`` to analytics and give it a key reading and exporting
    reports: the headers to send it with."""
    await gateway.accounts.subscribe(account_id, "analytics", plan)
    created = await gateway.accounts.create_key(
        account_id, name="reports", scopes=["analytics:reports:read", "analytics:reports:export"]
    )
    return {"Authorization": f"Bearer {created.key}"}
