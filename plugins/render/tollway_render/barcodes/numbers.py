"""Numbers with a check digit: the GS1 family (EAN-13, EAN-8, UPC-A, JAN, EAN-14),
ISBN-13, ISBN-10, ISSN and PZN.

Each is validated, completed with its check digit when it is left out (or verified when
it is not), and drawn in the symbology its users scan it in.
"""

from __future__ import annotations

import re

from barcode.codex import Code39, Gs1_128  # type: ignore[import-untyped]
from barcode.ean import EAN8, EAN13  # type: ignore[import-untyped]
from barcode.upc import UPCA  # type: ignore[import-untyped]

from tollway_render.barcodes.prepared import Prepared
from tollway_render.barcodes.writer import PixelImageWriter
from tollway_render.errors import RenderError

__all__ = [
    "prepare_ean8",
    "prepare_ean13",
    "prepare_ean14",
    "prepare_isbn10",
    "prepare_isbn13",
    "prepare_issn",
    "prepare_jan",
    "prepare_pzn",
    "prepare_upca",
]


def _gs1_check_digit(digits: str) -> int:
    """GS1 mod-10 check digit (EAN-8/13, UPC-A, GTIN-14): weights 3,1,3,... from the right."""
    total = sum(int(d) * (3 if i % 2 == 0 else 1) for i, d in enumerate(reversed(digits)))
    return (10 - total % 10) % 10


def _gtin(data: str, name: str, length: int) -> str:
    """Validate ``length - 1`` digits, or ``length`` digits with a correct check digit;
    return the full number including the check digit."""
    if not re.fullmatch(rf"[0-9]{{{length - 1}}}|[0-9]{{{length}}}", data):
        raise RenderError(
            f"{name} data must be {length - 1} or {length} digits "
            f"(the {_ordinal(length)} is the check digit)"
        )
    body = data[: length - 1]
    check = str(_gs1_check_digit(body))
    if len(data) == length and data[-1] != check:
        raise RenderError(
            f"invalid check digit for {name} {data}: expected {check}, got {data[-1]}"
        )
    return body + check


def _ordinal(n: int) -> str:
    return f"{n}th" if n not in (1, 2, 3) else {1: "1st", 2: "2nd", 3: "3rd"}[n]


def prepare_ean13(data: str, writer: PixelImageWriter) -> Prepared:
    full = _gtin(data, "EAN-13", 13)
    return Prepared(EAN13(full[:12], writer=writer), full)


def prepare_ean8(data: str, writer: PixelImageWriter) -> Prepared:
    full = _gtin(data, "EAN-8", 8)
    return Prepared(EAN8(full[:7], writer=writer), full)


def prepare_upca(data: str, writer: PixelImageWriter) -> Prepared:
    full = _gtin(data, "UPC-A", 12)
    return Prepared(UPCA(full[:11], writer=writer), full)


def prepare_jan(data: str, writer: PixelImageWriter) -> Prepared:
    full = _gtin(data, "JAN", 13)
    if not (450 <= int(full[:3]) <= 459 or 490 <= int(full[:3]) <= 499):
        raise RenderError("JAN data must start with 450-459 or 490-499 (GS1 Japan prefixes)")
    return Prepared(EAN13(full[:12], writer=writer), full)


def prepare_ean14(data: str, writer: PixelImageWriter) -> Prepared:
    # python-barcode's own EAN14 class draws an EAN-13 pattern with 14 digits, which no
    # scanner reads (python-barcode issue #103).  A GTIN-14 is carried as GS1-128 with
    # application identifier (01), which is what "EAN-14" means on logistic labels.
    gtin = _gtin(data, "EAN-14", 14)
    return Prepared(Gs1_128("01" + gtin, writer=writer), f"(01){gtin}")


def _strip_separators(data: str) -> str:
    return data.replace("-", "").replace(" ", "")


def prepare_isbn13(data: str, writer: PixelImageWriter) -> Prepared:
    digits = _strip_separators(data)
    if not re.fullmatch(r"[0-9]{12,13}", digits):
        raise RenderError(
            "ISBN-13 data must be 12 or 13 digits (hyphens allowed; the 13th is the check digit)"
        )
    if digits[:3] not in ("978", "979"):
        raise RenderError("ISBN-13 data must start with 978 or 979")
    if digits[:3] == "979" and digits[3] not in "18":
        raise RenderError("ISBN-13 data starting with 979 must continue with 1 or 8")
    full = _gtin(digits, "ISBN-13", 13)
    return Prepared(EAN13(full[:12], writer=writer), full)


def prepare_isbn10(data: str, writer: PixelImageWriter) -> Prepared:
    # Rendered as the Bookland EAN-13 978 + first nine digits + EAN check digit.
    # (python-barcode 0.16.1's ISBN10 class truncates that EAN to ten digits.)
    isbn = _strip_separators(data).upper()
    if not re.fullmatch(r"[0-9]{9}[0-9X]?", isbn):
        raise RenderError(
            "ISBN-10 data must be 9 digits, or 9 digits and a check character 0-9 or X "
            "(hyphens allowed)"
        )
    remainder = sum(i * int(d) for i, d in enumerate(isbn[:9], start=1)) % 11
    check = "X" if remainder == 10 else str(remainder)
    if len(isbn) == 10 and isbn[9] != check:
        raise RenderError(
            f"invalid check digit for ISBN-10 {data}: expected {check}, got {isbn[9]}"
        )
    full = _gtin("978" + isbn[:9], "ISBN-10", 13)
    return Prepared(EAN13(full[:12], writer=writer), full)


def prepare_issn(data: str, writer: PixelImageWriter) -> Prepared:
    # Rendered as the EAN-13 977 + first seven digits + "00" + EAN check digit.
    # (python-barcode 0.16.1's ISSN class truncates that EAN to eight digits.)
    issn = _strip_separators(data).upper()
    if not re.fullmatch(r"[0-9]{7}[0-9X]?", issn):
        raise RenderError(
            "ISSN data must be 7 digits, or 7 digits and a check character 0-9 or X "
            "(a hyphen is allowed, e.g. 0317-8471)"
        )
    remainder = (11 - sum(w * int(d) for w, d in zip(range(8, 1, -1), issn[:7], strict=True))) % 11
    check = "X" if remainder == 10 else str(remainder)
    if len(issn) == 8 and issn[7] != check:
        raise RenderError(f"invalid check digit for ISSN {data}: expected {check}, got {issn[7]}")
    full = _gtin("977" + issn[:7] + "00", "ISSN", 13)
    return Prepared(EAN13(full[:12], writer=writer), full)


def prepare_pzn(data: str, writer: PixelImageWriter) -> Prepared:
    """PZN (Pharmazentralnummer), always encoded as PZN8.

    Accepted: 8 digits (PZN8, the last is the check digit, weights 1..7 mod 11), or the
    legacy PZN7 as python-barcode's ``pzn`` takes it: 6 digits, or 7 with the check digit
    (weights 2..7).  A PZN7 became a PZN8 in 2013 by a leading 0, with the same check digit.
    The IFA encodes "-" + the eight digits in Code 39 (python-barcode's PZN class writes
    "PZN-" into the bars instead, which scanners read as plain Code 39, not as a PZN).
    An optional "PZN" / "PZN-" prefix is ignored.
    """
    pzn = data.removeprefix("PZN").strip().removeprefix("-").strip()
    if not re.fullmatch(r"[0-9]{6,8}", pzn):
        raise RenderError(
            "PZN data must be 8 digits (PZN8, the 8th is the check digit) or "
            "6 or 7 digits (legacy PZN7, the 7th is the check digit)"
        )
    if len(pzn) < 8:
        pzn = "0" + pzn
    remainder = sum(w * int(d) for w, d in enumerate(pzn[:7], start=1)) % 11
    if remainder == 10:
        raise RenderError(f"invalid PZN {data}: its check digit would be 10, so it is never issued")
    check = str(remainder)
    if len(pzn) == 8 and pzn[7] != check:
        raise RenderError(f"invalid check digit for PZN {data}: expected {check}, got {pzn[7]}")
    full = pzn[:7] + check
    return Prepared(Code39("-" + full, writer=writer, add_checksum=False), f"PZN-{full}")
