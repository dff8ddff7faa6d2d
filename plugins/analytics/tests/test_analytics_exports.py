"""The exports read back: the CSV by the csv module, the PDF's text by pypdf and its
pixels by PDFium, and both renderers' bytes twice over."""

from __future__ import annotations

import codecs
import csv
import io
from dataclasses import replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pypdfium2 as pdfium
from PIL import ImageChops
from pypdf import PdfReader

from tollway import Column, Gateway, Period, Report, ReportData
from tollway_analytics.exports import csv_bytes, pdf_bytes

PARIS = ZoneInfo("Europe/Paris")
JANUARY = Period(7, date(2026, 1, 1), date(2026, 1, 31), "day", PARIS)
FIRST_QUARTER = Period(7, date(2026, 1, 1), date(2026, 3, 31), "month", ZoneInfo("Asia/Tokyo"))
REPLY_TIMES = ((None, "\N{EN DASH}"), (0.25, "250 ms"), (42.5, "42.5 s"), (125, "2 min 05 s"))
"""Values of the seconds column, and how the PDF prints them."""
BAR = (37, 99, 235)  # the chart's bars, as exports.py fills them


async def _not_called(gateway: Gateway, period: Period) -> ReportData:
    raise AssertionError("the exports never compute a report")


SALES = Report(
    id="pos.sales_summary",
    name="Sales summary",
    description="Revenue, orders and reply times.",
    compute=_not_called,
    summary=(
        Column("revenue", "money", "Revenue"),
        Column("orders", "count"),
        Column("reply_time", "seconds", "Average reply time"),
        Column("conversion", "number", "Conversion rate"),
    ),
    series=(
        Column("revenue", "money", "Revenue"),
        Column("orders", "count"),
        Column("reply_time", "seconds", "Reply time"),
    ),
)
SUMMARY = {"revenue": 123450, "orders": 1234, "reply_time": 125.0, "conversion": 0.0345}


def revenue(day: int) -> int:
    """Cents of January's day ``day`` (0-based): a refund on the 5th, nothing on the 10th."""
    return {4: -20000, 9: 0, 19: 90000}.get(day, 10000 + 997 * day)


def january() -> ReportData:
    series = [
        {
            "date": JANUARY.start + timedelta(days=day),
            "revenue": revenue(day),
            "orders": 3 * day + (1000 if day == 30 else 0),
            "reply_time": REPLY_TIMES[day % 4][0],
        }
        for day in range(31)
    ]
    return ReportData(summary=SUMMARY, series=series, currency="USD")


def first_quarter() -> ReportData:
    series = [
        {"date": date(2026, month, 1), "revenue": cents, "orders": orders, "reply_time": None}
        for month, cents, orders in ((1, 1234, 5), (2, 0, 0), (3, 987654, 12))
    ]
    summary = {**SUMMARY, "revenue": 988888}
    return ReportData(summary=summary, series=series, currency="JPY")


def read_csv(body: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(body.decode("utf-8"), newline="")))


def pdf_text(pdf: bytes) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)


# CSV -----------------------------------------------------------------------------------


def test_the_csv_has_a_row_a_day_with_cents_and_exact_decimals() -> None:
    data = january()

    body = csv_bytes(SALES, data, JANUARY)

    assert not body.startswith(codecs.BOM_UTF8)
    assert body.count(b"\r\n") == 32
    assert b"\r" not in body.replace(b"\r\n", b"")
    assert b"\n" not in body.replace(b"\r\n", b"")
    header, *rows = read_csv(body)
    assert header == ["date", "revenue_cents", "revenue", "orders", "reply_time"]
    assert len(rows) == len(data.series) == 31
    for row, item in zip(rows, data.series, strict=True):
        assert row[0] == item["date"].isoformat()
        assert row[1] == str(item["revenue"])
        assert Decimal(row[2]) == Decimal(row[1]) / 100
        assert row[2] == f"{Decimal(row[1]) / 100:.2f}"
        assert row[3] == str(item["orders"])
        assert row[4] == ("" if item["reply_time"] is None else str(item["reply_time"]))
    assert rows[4] == ["2026-01-05", "-20000", "-200.00", "12", ""]
    assert rows[9][1:3] == ["0", "0.00"]
    assert body.splitlines()[2] == b"2026-01-02,10997,109.97,3,0.25"


def test_the_csv_of_months_in_yen_has_no_decimals() -> None:
    header, *rows = read_csv(csv_bytes(SALES, first_quarter(), FIRST_QUARTER))

    assert header == ["date", "revenue_cents", "revenue", "orders", "reply_time"]
    assert rows == [
        ["2026-01-01", "1234", "1234", "5", ""],
        ["2026-02-01", "0", "0", "0", ""],
        ["2026-03-01", "987654", "987654", "12", ""],
    ]


def test_csv_text_that_a_spreadsheet_would_run_is_neutralised_but_numbers_are_not() -> None:
    report = replace(
        SALES,
        name="=Sales",
        series=(
            Column("=customer", "number"),
            Column("-net", "money"),
            Column("change", "number"),
            Column("@note", "count"),
        ),
    )
    names = ("=HYPERLINK(1)", "+1", "-2", "@SUM(A1)", "\tx", "\rx", "Smith, Jane", "plain")
    series = [
        {"date": date(2026, 1, 1 + n), "=customer": name, "-net": -1050, "change": -1.5}
        for n, name in enumerate(names)
    ]
    data = ReportData(summary={}, series=series, currency="USD")

    body = csv_bytes(report, data, JANUARY)

    header, *rows = read_csv(body)
    assert header == ["date", "'=customer", "'-net_cents", "'-net", "change", "'@note"]
    assert [row[1] for row in rows] == [
        "'=HYPERLINK(1)",
        "'+1",
        "'-2",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "Smith, Jane",
        "plain",
    ]
    assert {tuple(row[2:]) for row in rows} == {("-1050", "-10.50", "-1.5", "")}
    # Quotes only where RFC 4180 needs them: a comma, a line break.
    assert b'2026-01-07,"Smith, Jane",-1050,-10.50,-1.5,\r\n' in body
    assert b"2026-01-08,plain,-1050,-10.50,-1.5,\r\n" in body
    assert b'"\'\rx"' in body


# PDF -----------------------------------------------------------------------------------


def test_the_pdf_reads_back_with_its_range_summary_and_every_day() -> None:
    data = january()

    pdf = pdf_bytes(SALES, data, JANUARY)

    reader = PdfReader(io.BytesIO(pdf))
    assert reader.metadata is not None
    assert reader.metadata.title == "Sales summary"
    text = pdf_text(pdf)
    for expected in (
        "Sales summary\npos.sales_summary\n2026-01-01 to 2026-01-31, Europe/Paris, by day",
        "Revenue $1,234.50",
        "Orders 1,234",
        "Average reply time 2 min 05 s",
        "Conversion rate 0.0345",
        "Revenue (USD), by day\n900.00\n-200.00\n2026-01-01 2026-01-31",
        "Date Revenue (USD) Orders Reply time",
        "pos.sales_summary \N{MIDDLE DOT} page 1 of 2",
    ):
        assert expected in text
    for day, item in enumerate(data.series):
        cents, orders = item["revenue"], item["orders"]
        amount = f"{Decimal(cents) / 100:.2f}"
        row = f"{item['date'].isoformat()} {amount} {orders:,} {REPLY_TIMES[day % 4][1]}"
        assert row in text
    assert "2026-01-31 399.10 1,090 42.5 s" in text


def test_the_pdf_of_months_in_yen() -> None:
    text = pdf_text(pdf_bytes(SALES, first_quarter(), FIRST_QUARTER))

    assert "2026-01-01 to 2026-03-31, Asia/Tokyo, by month" in text
    assert "Revenue \N{YEN SIGN}988,888" in text
    assert "Date Revenue (JPY) Orders Reply time" in text
    for row in ("2026-01-01 1234 5", "2026-02-01 0 0", "2026-03-01 987654 12"):
        assert f"{row} \N{EN DASH}" in text


def test_the_chart_has_a_bar_a_day_as_tall_as_its_value() -> None:
    data = january()
    values = [item["revenue"] for item in data.series]

    bars = chart_bars(pdf_bytes(SALES, data, JANUARY))

    drawn = [value for value in values if value]  # a day of nothing has no bar
    assert len(bars) == len(drawn) == 30
    slot = (bars[-1][0] - bars[0][0]) / 30  # from the first day's bar to the last's
    days = [day for day, value in enumerate(values) if value]
    for (left, _, _), day in zip(bars, days, strict=True):
        assert abs(left - (bars[0][0] + day * slot)) <= 1, day
    tallest = max(bottom - top for _, top, bottom in bars)
    assert tallest > 200  # pixels: the plot is 48 mm at 144 dpi
    scale = tallest / max(abs(value) for value in drawn)
    zero = bars[0][2]  # the first day sold: its bar stands on the zero line
    for (_, top, bottom), value in zip(bars, drawn, strict=True):
        assert abs((bottom - top) - abs(value) * scale) <= 2, value
        assert abs((bottom if value > 0 else top) - zero) <= 2, value
    assert bars[drawn.index(max(drawn))][1] == min(top for _, top, _ in bars)


def chart_bars(pdf: bytes) -> list[tuple[int, int, int]]:
    """``(left, top, bottom)`` in pixels of each bar on the first page rendered at
    144 dpi: a run of columns holding the bars' blue, measured at its tallest column
    (the antialiased edges may be shorter)."""
    image = pdfium.PdfDocument(pdf)[0].render(scale=2).to_pil().convert("RGB")
    near = [
        channel.point(lambda value, expected=expected: 255 * (abs(value - expected) <= 24))
        for channel, expected in zip(image.split(), BAR, strict=True)
    ]
    mask = ImageChops.multiply(ImageChops.multiply(near[0], near[1]), near[2])
    runs: list[list[tuple[int, int, int]]] = []
    for x in range(image.width):
        box = mask.crop((x, 0, x + 1, image.height)).getbbox()
        if box is None:
            continue
        if not runs or runs[-1][-1][0] != x - 1:
            runs.append([])
        runs[-1].append((x, box[1], box[3]))
    return [
        (run[0][0], *max(((top, bottom) for _, top, bottom in run), key=lambda c: c[1] - c[0]))
        for run in runs
    ]


def test_the_same_report_gives_the_same_bytes_dated_the_end_of_its_period() -> None:
    pdf = pdf_bytes(SALES, january(), JANUARY)

    assert pdf == pdf_bytes(SALES, january(), JANUARY)
    assert csv_bytes(SALES, january(), JANUARY) == csv_bytes(SALES, january(), JANUARY)
    metadata = PdfReader(io.BytesIO(pdf)).metadata
    assert metadata is not None
    assert metadata.creation_date == datetime(2026, 2, 1, tzinfo=PARIS)


def test_text_the_core_font_lacks_prints_as_question_marks() -> None:
    report = replace(SALES, name="Ventes \N{EM DASH} Ωmega 東京 \N{EURO SIGN}\x00\u202e")
    series = [{**item, "revenue": 100} for item in first_quarter().series]
    data = ReportData(summary=SUMMARY, series=series, currency="EUR")

    pdf = pdf_bytes(report, data, FIRST_QUARTER)

    assert "Ventes \N{EM DASH} ?mega ?? \N{EURO SIGN}\n" in pdf_text(pdf)
    assert PdfReader(io.BytesIO(pdf)).metadata.title == report.name  # type: ignore[union-attr]
    assert "Revenue \N{EURO SIGN}1,234.50" in pdf_text(pdf)
