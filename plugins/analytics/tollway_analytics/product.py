"""What the analytics product is: its descriptor, scopes and plans."""

from __future__ import annotations

from tollway import Plan, Product

PRODUCT = Product(
    name="analytics",
    prefix="/v1/analytics",
    title="Analytics",
    contract="analytics.yaml",
)

REPORTS_READ = "analytics:reports:read"
REPORTS_EXPORT = "analytics:reports:export"

SCOPES = {
    REPORTS_READ: "List reports and read their data",
    REPORTS_EXPORT: "Export reports as CSV or PDF files",
}

MAX_REPORT_DAYS = "max_report_days"
"""A plan's limit: the most days one report may cover (``end - start + 1``)."""

PLANS = (
    Plan("free", requests_per_day=1_000, rank=0, limits={MAX_REPORT_DAYS: 93}),
    Plan("pro", requests_per_day=10_000, rank=1, limits={MAX_REPORT_DAYS: 366}),
    Plan("enterprise", requests_per_day=100_000, rank=2, limits={MAX_REPORT_DAYS: 1_096}),
)
"""A free plan covers a quarter, pro a year, enterprise three years (leap days included)."""
