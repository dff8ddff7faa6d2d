"""For a product's tests: read one of its reports the three ways the analytics API
gives it (JSON, the CSV export, the PDF export), so a test can check that the numbers
it seeded through the product's own API are the same in each.

Needs the test extra's pypdf (imported only when a PDF is read)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import httpx

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
