"""A report's answer as files: CSV for spreadsheets and programs, PDF for people.

Both are pure functions of the report, its data and the period: no I/O, and the same
bytes for the same input.

CSV (RFC 4180, UTF-8 without BOM, CRLF line ends, fields quoted only when they must
be): the series, a header row first, then one row per bucket. The columns are ``date``
(the bucket's first day, ``YYYY-MM-DD``) and each series column by its name; a money
column becomes two, ``<name>_cents`` (integer minor units) and ``<name>`` (the exact
decimal in major units with the currency's own decimals, ``12.34``, ``1234`` for yen).
A missing value (a ``seconds`` column with nothing to measure) is an empty cell. The
summary is not in the CSV: it is one row of other columns, which JSON and PDF show.

Formula injection: a spreadsheet runs a cell starting with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return as a formula, so every text cell starting with one gets a
leading apostrophe (``'=1+2``), which spreadsheets show as text. Text is the header
(column names are the report's) and any string a report puts in its series, whatever
its column's kind. Numbers this module writes (counts, cents, decimals, dates) are not
text and stay as they are, so ``-5`` and ``-0.05`` remain negative amounts.

PDF (A4, more pages when the series is long): the report's name and id, the range
(``2026-01-01 to 2026-01-31, Europe/Paris, by day``), the summary as a table of
headings and values (money with its currency, ``$1,234.50``), a bar chart of the first
series column, then the series as a table (money in decimals, its currency in the
heading) whose headings repeat on each page. The text is set in the PDF core font
Helvetica, whose encoding (WinAnsi, i.e. cp1252) holds Western European text, ``€``
and typographic punctuation: no font file to ship or parse. Any other character (Greek,
CJK, emoji...) prints as ``?``; the CSV keeps every character. The PDF's date is the
end of the period, and its /ID a hash of its content.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from typing import Any, Final, TypeGuard

from fpdf import FPDF
from fpdf.enums import XPos, YPos
from fpdf.fonts import FontFace

from tollway import Column, Period, Report, ReportData, decimal_text
from tollway.billing import money

__all__ = ["csv_bytes", "pdf_bytes"]

_FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r")
_ENCODING: Final = "cp1252"
"""Of the core fonts' text: fpdf2 writes them with WinAnsiEncoding."""
_MAX_TEXT: Final = 200
"""Characters kept of any one string from a report; tables wrap what is kept."""
_MARGIN: Final = 18.0  # millimetres
_WIDTH: Final = 210.0 - 2 * _MARGIN
"""Between an A4 page's margins: the tables' and the chart's."""
_DATE_WIDTH: Final = 24.0
_CHART_HEIGHT: Final = 48.0  # the plot's; its caption and date labels add 14 mm
_AXIS_LABELS: Final = 24.0  # left of the plot, for the largest and smallest values
_INK: Final = (17, 24, 39)
_MUTED: Final = (107, 114, 128)
_RULE: Final = (209, 213, 219)
_BAR: Final = (37, 99, 235)
_NOTHING: Final = "\N{EN DASH}"
"""A value a report could not measure (``None``), in the PDF."""


# CSV -----------------------------------------------------------------------------------


def csv_bytes(report: Report, data: ReportData, period: Period) -> bytes:
    """``data``'s series as CSV (see the module's docstring). ``period`` is not needed:
    the dates are the series'; it is taken so every renderer has one signature."""
    header = ["date"]
    for column in report.series:
        header += [f"{column.name}_cents", column.name] if column.kind == "money" else [column.name]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([_neutralised(name) for name in header])
    for item in data.series:
        row = [_date_cell(item["date"])]
        for column in report.series:
            row += _csv_cells(column, item.get(column.name), data.currency)
        writer.writerow(row)
    return buffer.getvalue().encode("utf-8")


def _csv_cells(column: Column, value: Any, currency: str | None) -> list[str]:
    """One cell, or two for money (cents, decimal); empty for ``None``."""
    if column.kind == "money":
        if value is None:
            return ["", ""]
        cents = int(value)
        return [str(cents), decimal_text(cents, currency)]
    if value is None:
        return [""]
    return [str(value) if _is_number(value) else _neutralised(str(value))]


def _date_cell(day: Any) -> str:
    return day.isoformat() if isinstance(day, date) else _neutralised(str(day))


def _neutralised(text: str) -> str:
    """``text`` as a spreadsheet shows it, never run as a formula."""
    return f"'{text}" if text.startswith(_FORMULA_STARTS) else text


def _is_number(value: Any) -> TypeGuard[int | float | Decimal]:
    """Whether ``value`` is a number this module formats (a bool is not one)."""
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


# PDF -----------------------------------------------------------------------------------


def pdf_bytes(report: Report, data: ReportData, period: Period) -> bytes:
    """The report as A4 PDF bytes (see the module's docstring)."""
    pdf = _ReportPDF(_text(report.id))
    pdf.set_creation_date(period.days.end)
    pdf.set_title(report.name)
    pdf.set_lang("en")
    pdf.core_fonts_encoding = _ENCODING
    pdf.set_margins(_MARGIN, _MARGIN)
    pdf.set_auto_page_break(True, margin=_MARGIN + 6)
    pdf.add_page()
    _pen(pdf, 18).multi_cell(0, 8, _text(report.name), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    _pen(pdf, 10, _MUTED).cell(0, 6, pdf.report_id, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    _pen(pdf, 11).cell(0, 7, _range(period), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    if report.summary:
        _section(pdf, "Summary")
        _summary(pdf, report.summary, data)
    if report.series and data.series:
        _chart(pdf, report.series[0], data, period)
        _series(pdf, report.series, data)
    return bytes(pdf.output())


class _ReportPDF(FPDF):
    """A4 pages whose footer names the report and the page, for printed copies."""

    def __init__(self, report_id: str) -> None:
        super().__init__(unit="mm", format="A4")
        self.report_id = report_id

    def footer(self) -> None:
        self.set_y(-_MARGIN)
        _pen(self, 8, _MUTED).cell(
            0, 4, f"{self.report_id} \N{MIDDLE DOT} page {self.page_no()} of {{nb}}", align="C"
        )


def _pen(pdf: _ReportPDF, size: float, colour: tuple[int, int, int] = _INK) -> _ReportPDF:
    """Sets the text's size and colour (the font is Helvetica); returns ``pdf``."""
    pdf.set_font("helvetica", size=size)
    pdf.set_text_color(*colour)
    return pdf


def _section(pdf: _ReportPDF, title: str) -> None:
    pdf.ln(5)
    _pen(pdf, 12).cell(0, 7, title, new_x=XPos.LMARGIN, new_y=YPos.NEXT)


def _range(period: Period) -> str:
    return (
        f"{period.start.isoformat()} to {period.end.isoformat()}, "
        f"{_text(period.zone.key)}, by {period.granularity}"
    )


def _summary(pdf: _ReportPDF, columns: Sequence[Column], data: ReportData) -> None:
    _pen(pdf, 10).set_draw_color(*_RULE)
    with pdf.table(
        col_widths=(_WIDTH - 74.0, 74.0),
        text_align=("LEFT", "RIGHT"),
        borders_layout="HORIZONTAL_LINES",
        first_row_as_headings=False,
        line_height=5,
        padding=(1.5, 1),
        width=_WIDTH,
    ) as table:
        for column in columns:
            value = data.summary.get(column.name)
            if column.kind == "money" and value is not None and data.currency:
                shown = _text(money(int(value), data.currency))
            else:
                shown = _cell(column, value, data.currency)
            table.row((_text(column.heading), shown))


def _chart(pdf: _ReportPDF, column: Column, data: ReportData, period: Period) -> None:
    """Bars of ``column`` per bucket, from the zero line (up, or down for a negative
    value), scaled to the largest and smallest values, which label the axis."""
    if pdf.will_page_break(_CHART_HEIGHT + 20):
        pdf.add_page()
    _section(pdf, f"{_heading(column, data.currency)}, by {period.granularity}")
    values = [item.get(column.name) for item in data.series]
    measured = [float(value) for value in values if _is_number(value)]
    high, low = max([*measured, 0.0]), min([*measured, 0.0])
    left, top = _MARGIN + _AXIS_LABELS, pdf.get_y() + 3
    width, bottom = _WIDTH - _AXIS_LABELS, top + _CHART_HEIGHT
    zero = bottom - (-low / (high - low) * _CHART_HEIGHT if high > low else 0.0)
    slot = width / len(values)
    with pdf.local_context(fill_color=_BAR):
        for index, value in enumerate(values):
            if not _is_number(value) or high == low:
                continue
            y = zero - float(value) / (high - low) * _CHART_HEIGHT
            pdf.rect(left + slot * (index + 0.15), min(y, zero), slot * 0.7, abs(zero - y), "F")
    pdf.set_draw_color(*_MUTED)
    pdf.set_line_width(0.2)
    pdf.line(left, top, left, bottom)
    pdf.line(left, zero, left + width, zero)
    _pen(pdf, 8, _MUTED)
    for value, y in ((high, top), (low, bottom)):
        pdf.set_xy(_MARGIN, y - 2)
        pdf.cell(_AXIS_LABELS - 2, 4, _cell(column, value, data.currency), align="R")
    dates = [_date_text(data.series[0]["date"]), _date_text(data.series[-1]["date"])]
    pdf.set_xy(left, bottom + 1)
    pdf.cell(width / 2, 4, dates[0])
    pdf.cell(width / 2, 4, dates[1], align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)


def _series(pdf: _ReportPDF, columns: Sequence[Column], data: ReportData) -> None:
    """One row a bucket; fpdf2 breaks pages between rows and repeats the headings."""
    pdf.ln(4)
    _pen(pdf, 9).set_draw_color(*_RULE)
    rest = (_WIDTH - _DATE_WIDTH) / len(columns)
    with pdf.table(
        col_widths=(_DATE_WIDTH, *(rest for _ in columns)),
        text_align=("LEFT", *("RIGHT" for _ in columns)),
        borders_layout="HORIZONTAL_LINES",
        headings_style=FontFace(emphasis="", color=_MUTED, fill_color=(243, 244, 246)),
        line_height=4.5,
        padding=(1.2, 1),
        width=_WIDTH,
    ) as table:
        table.row(("Date", *(_heading(column, data.currency) for column in columns)))
        for item in data.series:
            cells = (_cell(column, item.get(column.name), data.currency) for column in columns)
            table.row((_date_text(item["date"]), *cells))


def _heading(column: Column, currency: str | None) -> str:
    """A column's heading, with the currency of a money column's decimals."""
    heading = _text(column.heading)
    return (
        f"{heading} ({_text(currency.upper())})" if column.kind == "money" and currency else heading
    )


def _cell(column: Column, value: Any, currency: str | None) -> str:
    """``value`` as a table shows it: money as a decimal, counts and other numbers with
    thousands separators (numbers to four decimals), durations in their unit."""
    if value is None:
        return _NOTHING
    if not _is_number(value):
        return _text(str(value))
    if column.kind == "money":
        return decimal_text(int(value), currency)
    if column.kind == "seconds":
        return _duration(float(value))
    if column.kind == "count" or isinstance(value, int):
        return f"{int(value):,}"
    return f"{round(float(value), 4):,}"


def _duration(seconds: float) -> str:
    """``0.25`` -> ``250 ms``, ``42.5`` -> ``42.5 s``, ``125`` -> ``2 min 05 s``,
    ``7260`` -> ``2 h 01 min``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _date_text(day: Any) -> str:
    return day.isoformat() if isinstance(day, date) else _text(str(day))


def _text(text: str) -> str:
    """``text`` as one drawable line: NFC, whitespace runs as one space, control and
    format characters dropped, characters the core font lacks as ``?``, at most
    :data:`_MAX_TEXT` long."""
    text = " ".join(unicodedata.normalize("NFC", text).split())
    kept = "".join(
        char if _drawable(char) else "?"
        for char in text
        if unicodedata.category(char) not in {"Cc", "Cf"}
    )
    return kept if len(kept) <= _MAX_TEXT else f"{kept[: _MAX_TEXT - 1]}\N{HORIZONTAL ELLIPSIS}"


def _drawable(char: str) -> bool:
    try:
        char.encode(_ENCODING)
    except UnicodeEncodeError:
        return False
    return True
