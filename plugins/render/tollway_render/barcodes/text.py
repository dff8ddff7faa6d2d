"""Symbologies that carry the data as sent: Code 128, GS1-128, Code 39, ITF and Codabar.

Each checks the data against its character set and length rules, so that what is drawn
is exactly what was sent; none adds an optional check character.
"""

from __future__ import annotations

import re

from barcode.charsets import code39 as _code39_charset  # type: ignore[import-untyped]
from barcode.codabar import CODABAR  # type: ignore[import-untyped]
from barcode.codex import Code39, Code128, Gs1_128  # type: ignore[import-untyped]
from barcode.itf import ITF  # type: ignore[import-untyped]

from tollway_render.barcodes.prepared import Prepared
from tollway_render.barcodes.writer import PixelImageWriter
from tollway_render.errors import RenderError

__all__ = [
    "prepare_codabar",
    "prepare_code39",
    "prepare_code128",
    "prepare_gs1_128",
    "prepare_itf",
]

_CODE39_CHARS = frozenset(_code39_charset.REF)


def prepare_code39(data: str, writer: PixelImageWriter) -> Prepared:
    invalid = sorted({char for char in data if char not in _CODE39_CHARS})
    if invalid:
        raise RenderError(
            "Code 39 data may only contain 0-9, upper-case A-Z, space and - . $ / + %; "
            f"not allowed: {', '.join(map(repr, invalid))}"
        )
    # No optional mod-43 check character: what is encoded is exactly what was sent.
    return Prepared(Code39(data, writer=writer, add_checksum=False), data)


class _Code128(Code128):  # type: ignore[misc]
    """python-barcode's Code128 without its leading "99" bug.

    Encoding always starts in code set C and ``_try_to_optimize`` folds a code-set switch
    in second position into the start code.  But 99 is both "switch to code set C" and the
    code set C value of the digit pair "99", so data starting with "99" lost those digits
    ("99123" scanned as "123").  Code set C is already active there, so a 99 in second
    position is always data; only switches to A (101) or B (100) are folded.
    """

    def _try_to_optimize(self, encoded: list[int]) -> list[int]:
        if encoded[1] == _CODE128_SWITCH_TO_C:
            return encoded
        result: list[int] = super()._try_to_optimize(encoded)
        return result


_CODE128_SWITCH_TO_C = 99


def prepare_code128(data: str, writer: PixelImageWriter) -> Prepared:
    invalid = sorted({char for char in data if not char.isascii()})
    if invalid:
        raise RenderError(
            f"Code 128 data must be ASCII; not allowed: {', '.join(map(repr, invalid))}"
        )
    printable = "".join(char if char.isprintable() else " " for char in data)
    return Prepared(_Code128(data, writer=writer), printable)


_FNC1 = Gs1_128.FNC1_CHAR  # "\xf1" in python-barcode's Code 128 charset


def prepare_gs1_128(data: str, writer: PixelImageWriter) -> Prepared:
    """GS1-128 in python-barcode's form.

    ``data`` is the element string without parentheses: application identifiers and
    values concatenated, e.g. ``"0109501101530003172612311" + "0ABC123"`` for
    (01)09501101530003 (17)261231 (10)ABC123.  A variable-length value that is not the
    last one must be terminated by FNC1, written as ``"\\xf1"`` (python-barcode's FNC1
    character) or as ASCII GS ``"\\x1d"`` (how scanners transmit it).  The leading FNC1
    that marks the symbol as GS1 is added automatically.  Decoders return the element
    string with GS (``"\\x1d"``) for each inner FNC1.
    """
    data = data.replace("\x1d", _FNC1)
    if "(" in data or ")" in data:
        raise RenderError(
            "GS1-128 data must not contain parentheses: write application identifiers and "
            "values concatenated, e.g. 0109501101530003 for (01)09501101530003"
        )
    if not (data[:2].isascii() and data[:2].isdigit()):
        raise RenderError(
            "GS1-128 data must start with an application identifier, e.g. 0109501101530003"
        )
    invalid = sorted({c for c in data if c != _FNC1 and not (c.isascii() and c.isprintable())})
    if invalid:
        raise RenderError(
            "GS1-128 data must be printable ASCII plus FNC1 separators (\\xf1 or \\x1d); "
            f"not allowed: {', '.join(map(repr, invalid))}"
        )
    return Prepared(Gs1_128(data, writer=writer), data.replace(_FNC1, " "))


def prepare_itf(data: str, writer: PixelImageWriter) -> Prepared:
    if not re.fullmatch(r"[0-9]+", data) or len(data) % 2:
        raise RenderError(
            "ITF data must be an even number of digits (add a leading 0 to an odd count)"
        )
    if len(data) < 4:
        # Readers reject shorter ITF symbols: a partial scan of a longer one looks alike.
        raise RenderError("ITF data must be at least 4 digits")
    # narrow = 1 module, wide = 3 modules (ratio 3:1, inside the 2:1..3:1 of the spec)
    return Prepared(ITF(data, writer=writer, narrow=1, wide=3), data)


_CODABAR_PATTERN = re.compile(r"[A-D][0-9$:/.+\-]{2,}[A-D]")


def prepare_codabar(data: str, writer: PixelImageWriter) -> Prepared:
    if not _CODABAR_PATTERN.fullmatch(data):
        raise RenderError(
            "Codabar data must start and end with one of A, B, C, D (start/stop characters) "
            "with at least 2 characters 0-9 - $ : / . + in between, e.g. A40156B"
        )
    return Prepared(CODABAR(data, writer=writer, narrow=1, wide=3), data)
