"""The invoice PDF read back: its text by pypdf, its pixels by PDFium (a second reader,
from a wheel, so CI needs no system package), its bytes, and the amounts it prints."""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

import pypdfium2 as pdfium
import pytest
from pypdf import PdfReader

from tollway.billing import money
from tollway_account.invoice_pdf import InvoiceDocument, InvoiceLine, Party, render_invoice

JANUARY = (date(2025, 1, 1), date(2025, 1, 31))
PRINTED_JANUARY = "2025-01-01 \N{EN DASH} 2025-01-31"
SELLER = Party(
    "Tollway Platform Ltd",
    ("1 Example Street", "London EC1A 1AA"),
    "billing@tollway.example",
    "GB123456789",
)
BUYER = Party(
    "Acme Widgets GmbH",
    ("Attn: Jane Roe", "Hauptstraße 1, 10115 Berlin"),
    "ap@acme.example",
    "DE811907980",
)
LINES = (
    InvoiceLine("chat: pro (monthly)", *JANUARY, 2900),
    InvoiceLine("qr: business (monthly)", *JANUARY, 123450),
    InvoiceLine("credit: unused chat: starter", date(2025, 1, 15), date(2025, 1, 31), -1050),
)
JAPANESE_BUYER = Party(
    "株式会社テスト", ("Zoë Ødegård", "東京都渋谷区 1-2-3"), tax_id="T1234567890123"
)
LONG = ("Société Générale d'Investissements Ωμέγα " * 6)[:200]
SOLID = "W" * 200  # no space to break at: the widest text a column can be asked to hold
MM = 72 / 25.4  # PDF points in a millimetre


def invoice(**changes: Any) -> InvoiceDocument:
    document = InvoiceDocument(
        number="INV-000042",
        status="paid",
        issued_at=datetime(2025, 2, 1, 9, 30, tzinfo=UTC),
        paid_at=datetime(2025, 2, 3, 10, 15, tzinfo=UTC),
        period_start=JANUARY[0],
        period_end=JANUARY[1],
        currency="usd",
        seller=SELLER,
        buyer=BUYER,
        lines=LINES,
        total_cents=125300,
    )
    return replace(document, **changes)


def texts(pdf: bytes) -> list[str]:
    return [page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages]


def ink(pdf: bytes) -> list[tuple[int, int]]:
    """Per page as PDFium draws it: dark pixels inside the margins, and outside them
    (17 mm left and right, 15 mm at the top, 12 mm at the bottom, where only the
    footer's line may be)."""
    pages = []
    for page in pdfium.PdfDocument(pdf):
        bitmap = page.render(scale=1, grayscale=True)
        pixels, stride = bytes(bitmap.buffer), bitmap.stride
        left, right = round(17 * MM), round((210 - 17) * MM)
        top, bottom = round(15 * MM), round((297 - 12) * MM)
        inside = outside = 0
        for y in range(bitmap.height):
            row = pixels[y * stride : y * stride + bitmap.width]
            dark = [x for x, value in enumerate(row) if value < 160]
            within = [x for x in dark if left <= x <= right] if top <= y <= bottom else []
            inside += len(within)
            outside += len(dark) - len(within)
        pages.append((inside, outside))
    return pages


def test_the_invoice_reads_back_with_everything_on_it() -> None:
    pdf = render_invoice(invoice())

    [text] = texts(pdf)
    for expected in (
        "Invoice\nINV-000042\nPAID",
        "FROM\nTollway Platform Ltd\n1 Example Street\nLondon EC1A 1AA",
        "billing@tollway.example\nTax ID: GB123456789",
        "BILL TO\nAcme Widgets GmbH\nAttn: Jane Roe\nHauptstraße 1, 10115 Berlin",
        "ap@acme.example\nTax ID: DE811907980",
        "Issued 2025-02-01",
        f"Service period {PRINTED_JANUARY}",
        "Description Period Amount",
        f"chat: pro (monthly) {PRINTED_JANUARY} $29.00",
        f"qr: business (monthly) {PRINTED_JANUARY} $1,234.50",
        "credit: unused chat: starter 2025-01-15 \N{EN DASH} 2025-01-31 -$10.50",
        "Subtotal $1,253.00\nTotal $1,253.00\nPaid on 2025-02-03",
        "INV-000042 · page 1 of 1",
    ):
        assert expected in text
    [(inside, outside)] = ink(pdf)
    assert inside > 0
    assert outside == 0


def test_an_open_invoice_to_a_person_shows_no_payment_and_no_empty_tax_id() -> None:
    buyer = Party("Jane Roe", tax_id=" \t")
    document = invoice(status="open", paid_at=None, buyer=buyer, total_cents=200000)

    [text] = texts(render_invoice(document))

    assert "OPEN" in text
    assert "BILL TO\nJane Roe\nIssued" in text
    assert text.count("Tax ID") == 1  # the seller's
    assert "Subtotal $1,253.00\nTotal $2,000.00" in text
    assert "Paid" not in text


def test_names_in_any_script_render_and_read_back() -> None:
    cities = ("Москва", "Αθήνα", "서울")
    buyer = replace(JAPANESE_BUYER, lines=(*JAPANESE_BUYER.lines, *cities))
    line = InvoiceLine("チャット: プロ (月額)", *JANUARY, 2900)
    document = invoice(buyer=buyer, lines=(line,), total_cents=2900, currency="jpy")

    pdf = render_invoice(document)

    [text] = texts(pdf)
    assert "株式会社テスト\nZoë Ødegård\n東京都渋谷区 1-2-3\nМосква\nΑθήνα\n서울" in text  # noqa: RUF001
    assert "Tax ID: T1234567890123" in text
    assert f"チャット: プロ (月額) {PRINTED_JANUARY} ¥2,900" in text
    # The CJK font is embedded only where it is needed: it costs ~0.2 s to load.
    assert b"WenQuanYiMicroHei" in pdf
    assert b"WenQuanYiMicroHei" not in render_invoice(invoice(buyer=Party("Zoë Ødegård")))


def test_characters_no_font_has_print_as_question_marks() -> None:
    buyer = Party("شركة 🚀\x00\u202e Ltd\ud800", ("Acme\n\t Widgets",))

    [text] = texts(render_invoice(invoice(buyer=buyer)))

    # Arabic and emoji are in neither font; NUL and RIGHT-TO-LEFT OVERRIDE are dropped;
    # a lone surrogate (which JSON can carry) is no character at all.
    assert "BILL TO\n???? ? Ltd?\nAcme Widgets\nIssued" in text


def test_200_character_text_wraps_within_the_margins_of_one_page() -> None:
    party = Party(LONG, (SOLID, LONG), f"{SOLID}@example.com", SOLID)
    lines = (InvoiceLine(SOLID, *JANUARY, 100), InvoiceLine(LONG, *JANUARY, 200))
    document = invoice(
        number=SOLID, seller=party, buyer=replace(party, name=SOLID), lines=lines, total_cents=300
    )

    pdf = render_invoice(document)

    [text] = texts(pdf)
    assert "…" in text  # the names were cut after three lines
    assert "Subtotal $3.00\nTotal $3.00" in text
    [(inside, outside)] = ink(pdf)
    assert inside > 0
    assert outside == 0


def test_forty_lines_paginate_with_headings_on_every_page() -> None:
    lines = tuple(InvoiceLine(f"seat {n:02d}", *JANUARY, 1000 + n) for n in range(40))

    pdf = render_invoice(invoice(lines=lines, total_cents=40780))

    pages = texts(pdf)
    assert len(pages) == 2
    joined = "\n".join(pages)
    assert [joined.count(f"seat {n:02d} 2025-01-01") for n in range(40)] == [1] * 40
    for number, page in enumerate(pages, start=1):
        assert "Description Period Amount" in page
        assert f"INV-000042 · page {number} of 2" in page
    assert "Total $407.80\nPaid on 2025-02-03" in pages[-1]
    assert all(outside == 0 for _inside, outside in ink(pdf))


def test_the_same_document_gives_the_same_bytes_in_any_process() -> None:
    document = invoice(buyer=JAPANESE_BUYER)  # both fonts, so both subsets are compared
    pdf = render_invoice(document)
    script = (
        "import pickle, sys\n"
        "from tollway_account.invoice_pdf import render_invoice\n"
        "sys.stdout.buffer.write(render_invoice(pickle.load(sys.stdin.buffer)))\n"
    )

    # This process hashes strings with a random seed; the child with none.
    child = subprocess.run(
        [sys.executable, "-c", script],
        input=pickle.dumps(document),
        capture_output=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        check=True,
        timeout=120,
    )
    assert child.stdout == pdf

    metadata = PdfReader(io.BytesIO(pdf)).metadata
    assert metadata is not None
    assert metadata.creation_date == document.issued_at
    assert render_invoice(replace(document, paid_at=None)) != pdf


@pytest.mark.parametrize(
    ("amount_cents", "currency", "expected"),
    [
        (0, "usd", "$0.00"),
        (5, "usd", "$0.05"),
        (123450, "usd", "$1,234.50"),
        (-1050, "usd", "-$10.50"),  # a credit
        (100_000_000_00, "eur", "€100,000,000.00"),
        (1, "GBP", "£0.01"),
        (123450, "chf", "1,234.50 CHF"),
        (-99, "chf", "-0.99 CHF"),
        (1235, "jpy", "¥1,235"),
        (-500, "jpy", "-¥500"),
        (1_000_000, "krw", "1,000,000 KRW"),
        (1234, "kwd", "1.234 KWD"),
        (150, "xyz", "1.50 XYZ"),  # a code we know nothing of: two decimals
    ],
)
def test_money(amount_cents: int, currency: str, expected: str) -> None:
    assert money(amount_cents, currency) == expected
