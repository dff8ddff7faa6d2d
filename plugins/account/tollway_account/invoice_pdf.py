"""An invoice as a PDF: the document the platform sends a tenant for each invoice.

fpdf2's core fonts only know latin-1 and tenants name themselves in any script, so the
text is set in Noto Sans (Latin, Greek, Cyrillic, Vietnamese: a 2.0 MB font from the
``fontpkg-noto-sans`` wheel) with WenQuanYi Micro Hei (CJK ideographs, kana, Hangul:
5.2 MB from ``paperang-p2-fonts-cjk``) as fallback. fpdf2 parses the fallback in about
0.2 s, so it is added only to documents that hold a character only it has. A character
neither font has (Arabic, Hebrew, Thai, emoji...) prints as ``?``: fpdf2 never meets a
glyph it cannot draw. Tenant text is wrapped to its column and cut with an ellipsis
after a few lines, so no name, however long, leaves the page or pushes the table off it.

The bytes depend on the document only: the PDF's date is ``issued_at`` and its /ID a
hash of its content, so the route can derive an ETag from them.
"""

from __future__ import annotations

import functools
import logging
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from importlib.resources import files
from typing import Final, cast

from fontTools.ttLib import TTFont  # type: ignore[import-untyped]
from fpdf import FPDF
from fpdf.enums import MethodReturnValue, XPos, YPos
from fpdf.fonts import FontFace

from tollway.billing import money

logging.getLogger("fontTools.subset").setLevel(logging.WARNING)
"""fpdf2 subsets the fonts with fontTools, which logs every step at INFO: a dozen lines
per PDF in the gateway's log."""

__all__ = [
    "InvoiceDocument",
    "InvoiceLine",
    "Party",
    "render_invoice",
]

_TEXT_FONT: Final = ("fontpkg_noto_sans", "files/NotoSans[wdth,wght].ttf")
_FALLBACK_FONT: Final = ("paperang_p2_fonts_cjk", "fonts/wqy-microhei.ttc")
_MAX_TEXT: Final = 300
"""Characters kept of any one tenant string; the wrapping caps what is drawn anyway."""
_MAX_ADDRESS_LINES: Final = 6
_MARGIN: Final = 18.0  # millimetres; A4 leaves 174 mm between the margins
_COLUMNS: Final = (96.0, 46.0, 32.0)  # description, period, amount
_PARTY_WIDTH: Final = 84.0  # two blocks side by side, 6 mm apart
_AMOUNT_WIDTH: Final = 60.0  # of the totals, wider than the table's column for their size
_DASH: Final = "\N{EN DASH}"
_INK: Final = (17, 24, 39)
_MUTED: Final = (107, 114, 128)
_BADGE_COLOURS: Final[dict[str, tuple[int, int, int]]] = {
    "paid": (21, 128, 61),
    "open": (29, 78, 216),
    "failed": (185, 28, 28),
    "uncollectible": (180, 83, 9),
}
"""A status not named here (void) gets the muted grey."""


@dataclass(frozen=True, slots=True)
class Party:
    """The seller (the operator's company) or the buyer (a company or a person)."""

    name: str
    lines: Sequence[str] = ()
    email: str | None = None
    tax_id: str | None = None


@dataclass(frozen=True, slots=True)
class InvoiceLine:
    description: str
    period_start: date
    period_end: date
    amount_cents: int


@dataclass(frozen=True, slots=True)
class InvoiceDocument:
    """Everything printed on an invoice; amounts are in the currency's minor unit."""

    number: str
    status: str
    issued_at: datetime
    paid_at: datetime | None
    period_start: date
    period_end: date
    currency: str
    seller: Party
    buyer: Party
    lines: Sequence[InvoiceLine]
    total_cents: int


def render_invoice(document: InvoiceDocument) -> bytes:
    """The invoice as A4 PDF bytes, the same bytes for the same document."""
    pdf = _InvoicePDF(_clean(document.number, 40))
    pdf.set_creation_date(document.issued_at)
    pdf.set_title(f"Invoice {pdf.number}")
    pdf.set_author(_clean(document.seller.name))
    pdf.set_lang("en")
    pdf.set_margins(_MARGIN, _MARGIN)
    pdf.set_auto_page_break(True, margin=_MARGIN + 6)
    pdf.add_font("text", fname=_font_path(_TEXT_FONT))
    if _needs_fallback(document):
        pdf.add_font("fallback", fname=_font_path(_FALLBACK_FONT))
        pdf.set_fallback_fonts(["fallback"])
    pdf.add_page()
    _header(pdf, document.status)
    left = _party(pdf, _MARGIN, "From", document.seller)
    right = _party(pdf, _MARGIN + _PARTY_WIDTH + 6, "Bill to", document.buyer)
    pdf.set_y(max(left, right) + 4)
    for label, value in (
        ("Issued", document.issued_at.date().isoformat()),
        ("Service period", _period(document.period_start, document.period_end)),
    ):
        _pen(pdf, 10, _MUTED).cell(32, 6, label)
        _pen(pdf, 10).cell(0, 6, value, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.ln(6)
    _table(pdf, document)
    _totals(pdf, document)
    return bytes(pdf.output())


class _InvoicePDF(FPDF):
    """An A4 page whose footer names the invoice and the page, for printed copies."""

    def __init__(self, number: str) -> None:
        super().__init__(unit="mm", format="A4")
        self.number = number

    def footer(self) -> None:
        self.set_y(-_MARGIN)
        _pen(self, 8, _MUTED).cell(
            0, 4, f"{self.number} · page {self.page_no()} of {{nb}}", align="C"
        )


def _pen(pdf: _InvoicePDF, size: float, colour: tuple[int, int, int] = _INK) -> _InvoicePDF:
    """Sets the text's size and colour (the font is the one family); returns ``pdf``."""
    pdf.set_font("text", size=size)
    pdf.set_text_color(*colour)
    return pdf


def _header(pdf: _InvoicePDF, status: str) -> None:
    _pen(pdf, 24).cell(0, 11, "Invoice", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    _lines(_pen(pdf, 12, _MUTED), pdf.l_margin, pdf.number, 2, width=_COLUMNS[0])
    bottom = pdf.get_y()
    label = _clean(status.upper(), 20)
    width = _pen(pdf, 10, (255, 255, 255)).get_string_width(label) + 8
    pdf.set_xy(pdf.w - _MARGIN - width, _MARGIN + 2)
    pdf.set_fill_color(*_BADGE_COLOURS.get(status, _MUTED))
    pdf.cell(width, 7, label, align="C", fill=True)
    pdf.set_fill_color(255, 255, 255)
    pdf.set_y(bottom + 8)


def _party(pdf: _InvoicePDF, x: float, heading: str, party: Party) -> float:
    """Draws the party's block at ``x`` from the current line down; returns its bottom."""
    top = pdf.get_y()
    _lines(_pen(pdf, 8, _MUTED), x, heading.upper(), 1)
    _lines(_pen(pdf, 12), x, party.name, 3)
    _pen(pdf, 10)
    for line in party.lines[:_MAX_ADDRESS_LINES]:
        _lines(pdf, x, line, 2)
    _lines(pdf, x, party.email or "", 1)
    tax_id = _clean(party.tax_id or "")
    _lines(pdf, x, f"Tax ID: {tax_id}" if tax_id else "", 2)
    bottom = pdf.get_y()
    pdf.set_y(top)
    return bottom


def _lines(
    pdf: _InvoicePDF, x: float, text: str, max_lines: int, width: float = _PARTY_WIDTH
) -> None:
    """``text`` (nothing when empty) at ``x`` below the current line, wrapped to ``width``
    in at most ``max_lines`` lines; the last ends in an ellipsis when the text does not fit."""
    text = _clean(text)
    if not text:
        return
    dry_run = pdf.multi_cell(width, 1, text, dry_run=True, output=MethodReturnValue.LINES)
    lines = cast("list[str]", dry_run)
    if len(lines) > max_lines:
        last = lines[max_lines - 1]
        while last and pdf.get_string_width(f"{last}…") > width - 2 * pdf.c_margin:
            last = last[:-1]
        lines = [*lines[: max_lines - 1], f"{last.rstrip()}…"]
    for line in lines:
        pdf.set_x(x)
        pdf.cell(width, pdf.font_size * 1.4, line, new_y=YPos.NEXT)


def _table(pdf: _InvoicePDF, document: InvoiceDocument) -> None:
    """One row a line; fpdf2 breaks pages between rows and repeats the headings."""
    _pen(pdf, 9).set_draw_color(229, 231, 235)
    with pdf.table(
        col_widths=_COLUMNS,
        text_align=("LEFT", "LEFT", "RIGHT"),
        borders_layout="HORIZONTAL_LINES",
        headings_style=FontFace(emphasis="", color=_MUTED, fill_color=(243, 244, 246)),
        line_height=4.5,
        padding=(1.5, 1),
        width=sum(_COLUMNS),
    ) as table:
        table.row(("Description", "Period", "Amount"))
        for line in document.lines:
            period = _period(line.period_start, line.period_end)
            amount = money(line.amount_cents, document.currency)
            table.row((_clean(line.description), period, amount))


def _totals(pdf: _InvoicePDF, document: InvoiceDocument) -> None:
    """Subtotal, total and payment, kept together on one page."""
    if pdf.will_page_break(24):
        pdf.add_page()
    pdf.ln(3)
    subtotal = sum(line.amount_cents for line in document.lines)
    for label, cents, size, colour in (
        ("Subtotal", subtotal, 10, _MUTED),
        ("Total", document.total_cents, 13, _INK),
    ):
        _pen(pdf, size, colour).cell(sum(_COLUMNS) - _AMOUNT_WIDTH, 7, label, align="R")
        amount = money(cents, document.currency)
        pdf.cell(_AMOUNT_WIDTH, 7, amount, align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    if document.paid_at is not None:
        paid_on = f"Paid on {document.paid_at.date().isoformat()}"
        _pen(pdf, 10, _BADGE_COLOURS["paid"]).cell(0, 7, paid_on, align="R")


def _period(start: date, end: date) -> str:
    return f"{start.isoformat()} {_DASH} {end.isoformat()}"


def _clean(text: str, limit: int = _MAX_TEXT) -> str:
    """``text`` as one drawable line: NFC, whitespace runs as one space, control and
    format characters dropped, characters no font has as ``?``, at most ``limit`` long."""
    covered = _coverage()[0]
    text = " ".join(unicodedata.normalize("NFC", text).split())
    kept = "".join(
        char if ord(char) in covered else "?"
        for char in text
        if unicodedata.category(char) not in {"Cc", "Cf"}
    )
    return kept if len(kept) <= limit else f"{kept[: limit - 1]}…"


def _needs_fallback(document: InvoiceDocument) -> bool:
    only_fallback = _coverage()[1]
    return any(ord(char) in only_fallback for text in _texts(document) for char in _clean(text))


def _texts(document: InvoiceDocument) -> Iterator[str]:
    """Every string on the invoice that does not come from this module or the calendar."""
    yield from (document.number, document.status.upper())
    for party in (document.seller, document.buyer):
        yield from (party.name, *party.lines, party.email or "", party.tax_id or "")
    yield from (line.description for line in document.lines)


@functools.cache
def _coverage() -> tuple[frozenset[int], frozenset[int]]:
    """The code points either font draws, and those only the fallback draws."""
    text, fallback = (
        frozenset(TTFont(_font_path(font), lazy=True, fontNumber=0).getBestCmap())
        for font in (_TEXT_FONT, _FALLBACK_FONT)
    )
    return text | fallback, fallback - text


def _font_path(font: tuple[str, str]) -> str:
    package, name = font
    return str(files(package).joinpath(name))
