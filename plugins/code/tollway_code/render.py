"""Rendering of QR codes (segno) and linear barcodes (python-barcode + Pillow).

Pure functions: no web framework, no I/O besides in-memory buffers.  Every input that
cannot be rendered raises :class:`RenderError` whose ``str()`` is the client-facing reason.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import segno
from barcode.charsets import code39 as _code39_charset  # type: ignore[import-untyped]
from barcode.codabar import CODABAR  # type: ignore[import-untyped]
from barcode.codex import Code39, Code128, Gs1_128  # type: ignore[import-untyped]
from barcode.ean import EAN8, EAN13  # type: ignore[import-untyped]
from barcode.errors import BarcodeError  # type: ignore[import-untyped]
from barcode.itf import ITF  # type: ignore[import-untyped]
from barcode.upc import UPCA  # type: ignore[import-untyped]
from barcode.writer import ImageWriter  # type: ignore[import-untyped]
from PIL import Image, ImageDraw, ImageFont

from .schemas import (
    BarcodeRequest,
    BatchQrRequest,
    BatchQrResponse,
    BatchQrResult,
    CodeType,
    QrRequest,
)

__all__ = [
    "CODE_TYPES",
    "RenderError",
    "RenderedImage",
    "data_url",
    "render_barcode",
    "render_batch",
    "render_qr",
]


@dataclass(frozen=True, slots=True)
class RenderedImage:
    content: bytes
    media_type: str
    width: int
    height: int


class RenderError(ValueError):
    """Input cannot be rendered; str(error) is the client-facing reason."""


def data_url(image: RenderedImage) -> str:
    """``data:<media type>;base64,<content>`` for embedding the image in JSON or HTML."""
    return f"data:{image.media_type};base64,{base64.b64encode(image.content).decode('ascii')}"


# --------------------------------------------------------------------------- colours


def _hex(colour: str) -> str:
    """``'#1A237E'`` / ``'1a237e'`` -> ``'#1a237e'`` (already validated by the schema)."""
    return "#" + colour.removeprefix("#").lower()


def _rgb(colour: str) -> tuple[int, int, int]:
    value = int(colour.removeprefix("#"), 16)
    return (value >> 16) & 0xFF, (value >> 8) & 0xFF, value & 0xFF


_HEX_COLOUR = re.compile(r"#?[0-9a-fA-F]{6}")


def _check_colours(dark: str, light: str) -> None:
    # The schemas' pattern is searched, and its '$' also matches before a final newline.
    for name, colour in (("dark", dark), ("light", light)):
        if not _HEX_COLOUR.fullmatch(colour):
            raise RenderError(f"{name} must be 6 hex digits, with or without '#'")
    if _hex(dark) == _hex(light):
        raise RenderError("dark and light colours must differ")


# --------------------------------------------------------------------------- QR codes

# Capacity of the largest symbol (version 40) per error correction level and mode,
# ISO/IEC 18004 table 7: numeric digits, alphanumeric characters, bytes, kanji characters.
_QR_V40_CAPACITY: dict[str, dict[str, int]] = {
    "L": {"numeric": 7089, "alphanumeric": 4296, "byte": 2953, "kanji": 1817},
    "M": {"numeric": 5596, "alphanumeric": 3391, "byte": 2331, "kanji": 1435},
    "Q": {"numeric": 3993, "alphanumeric": 2420, "byte": 1663, "kanji": 1024},
    "H": {"numeric": 3057, "alphanumeric": 1852, "byte": 1273, "kanji": 784},
}
_QR_ALPHANUMERIC = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:")


def _is_latin1(data: str) -> bool:
    try:
        data.encode("iso-8859-1")
    except UnicodeEncodeError:
        return False
    return True


def _qr_mode(data: str) -> str | None:
    """The mode to force on segno, or None to let it choose.

    segno encodes text as ISO-8859-1 when possible and then checks whether the *bytes*
    look like Shift_JIS double-byte characters, so e.g. ``"éa"`` (0xE9 0x61) would be
    written in kanji mode and decode as ``"饌"``.  Plain ASCII can never look like kanji
    (the first byte would have to be >= 0x81), so only non-ASCII Latin-1 text is forced
    into byte mode.  Other text goes to Shift_JIS (genuine kanji) or UTF-8 as segno does.
    """
    if not data.isascii() and _is_latin1(data):
        return "byte"
    return None


def _overflow_message(data: str, ecc: str) -> str:
    """Explain a segno DataOverflowError with the capacity of the mode segno would use."""
    capacity = _QR_V40_CAPACITY[ecc]
    prefix = f"data is too long for error correction level {ecc}: at most"
    if data.isascii() and data.isdigit():
        return f"{prefix} {capacity['numeric']} digits in numeric mode (got {len(data)})"
    if all(char in _QR_ALPHANUMERIC for char in data):
        return (
            f"{prefix} {capacity['alphanumeric']} characters in alphanumeric mode (got {len(data)})"
        )
    if _is_latin1(data):
        encoding, raw = "ISO-8859-1", data.encode("iso-8859-1")
    else:
        try:
            raw = data.encode("shift_jis")
        except UnicodeEncodeError:
            encoding, raw = "UTF-8", data.encode("utf-8")
        else:
            if _is_kanji(raw):
                return (
                    f"{prefix} {capacity['kanji']} characters in kanji mode (got {len(raw) // 2})"
                )
            encoding = "Shift_JIS"
    return (
        f"{prefix} {capacity['byte']} bytes in byte mode (got {len(raw)} bytes as {encoding}); "
        "a lower error correction level holds more"
    )


def _is_kanji(raw: bytes) -> bool:
    """Whether segno would use kanji mode for these Shift_JIS bytes (ISO/IEC 18004 8.4.5)."""
    if not raw or len(raw) % 2:
        return False
    for i in range(0, len(raw), 2):
        code = raw[i] << 8 | raw[i + 1]
        if not (0x8140 <= code <= 0x9FFC or 0xE040 <= code <= 0xEBBF):
            return False
    return True


def _make_qr(data: str, ecc: str) -> segno.QRCode:
    try:
        return segno.make_qr(data, error=ecc, mode=_qr_mode(data), boost_error=False)
    except segno.DataOverflowError:
        raise RenderError(_overflow_message(data, ecc)) from None


@dataclass(frozen=True, slots=True)
class _QrLayout:
    """Integer-pixel placement of a QR matrix on a size x size canvas."""

    matrix: tuple[bytearray, ...]
    scale: int  # pixels per module
    offset: int  # pixel position of the first matrix module (margin and centring included)


def _qr_layout(qr: segno.QRCode, size: int, margin: int) -> _QrLayout:
    modules = len(qr.matrix)
    total = modules + 2 * margin
    scale = size // total
    if scale < 1:
        raise RenderError(
            f"size {size} px is too small for this data: the QR code (version {qr.version}, "
            f"{modules}x{modules} modules plus a margin of {margin}) needs at least {total} px"
        )
    # Centre the symbol; the remainder (< total px) goes to the quiet zone on both sides.
    offset = (size - total * scale) // 2 + margin * scale
    return _QrLayout(qr.matrix, scale, offset)


def _qr_png(layout: _QrLayout, size: int, dark: str, light: str) -> bytes:
    modules = len(layout.matrix)
    # Palette image: index 0 = light, 1 = dark; segno's matrix holds exactly 0/1 bytes.
    palette = [*_rgb(light), *_rgb(dark)]
    symbol = Image.frombytes("P", (modules, modules), b"".join(layout.matrix))
    symbol.putpalette(palette)
    scaled = modules * layout.scale
    if layout.scale != 1:
        symbol = symbol.resize((scaled, scaled), Image.Resampling.NEAREST)
    canvas = Image.new("P", (size, size), 0)
    canvas.putpalette(palette)
    canvas.paste(symbol, (layout.offset, layout.offset))
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return buffer.getvalue()


def _qr_svg(layout: _QrLayout, size: int, dark: str, light: str) -> bytes:
    """Same geometry as the PNG; dark modules as one path of per-row runs, in module units."""
    runs: list[str] = []
    for y, row in enumerate(layout.matrix):
        x, width = 0, len(row)
        while x < width:
            if row[x]:
                start = x
                while x < width and row[x]:
                    x += 1
                runs.append(f"M{start} {y}h{x - start}v1h-{x - start}z")
            else:
                x += 1
    transform = f"translate({layout.offset} {layout.offset}) scale({layout.scale})"
    svg = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
        f'viewBox="0 0 {size} {size}" shape-rendering="crispEdges">'
        f'<rect width="{size}" height="{size}" fill="{_hex(light)}"/>'
        f'<path transform="{transform}" fill="{_hex(dark)}" d="{"".join(runs)}"/>'
        "</svg>\n"
    )
    return svg.encode("utf-8")


def _render_qr(
    data: str, *, format: str, size: int, ecc: str, margin: int, dark: str, light: str
) -> RenderedImage:
    _check_colours(dark, light)
    layout = _qr_layout(_make_qr(data, ecc), size, margin)
    if format == "svg":
        return RenderedImage(_qr_svg(layout, size, dark, light), "image/svg+xml", size, size)
    return RenderedImage(_qr_png(layout, size, dark, light), "image/png", size, size)


def render_qr(request: QrRequest) -> RenderedImage:
    """Render a QR code as a ``size`` x ``size`` PNG or SVG with crisp integer-pixel modules.

    The largest whole number of pixels per module that fits ``size`` (margin included) is
    used and the symbol is centred; the leftover pixels become extra light quiet zone.
    """
    return _render_qr(
        request.data,
        format=request.format,
        size=request.size,
        ecc=request.ecc,
        margin=request.margin,
        dark=request.dark,
        light=request.light,
    )


def _batch_ids(request: BatchQrRequest) -> list[str]:
    """Each item's ``id``, or its 1-based position (``"1"``, ``"2"``, ...) when it has none.

    Raises :class:`RenderError` when two items would share one, so that every result can be
    told apart by its ``id`` (a caller's ``"1"`` on item 2 collides with item 1's position).
    """
    ids = [item.id if item.id is not None else str(n) for n, item in enumerate(request.items, 1)]
    first: dict[str, int] = {}
    for position, item_id in enumerate(ids, start=1):
        if item_id in first:
            raise RenderError(
                "Invalid request body: item ids must be unique within a batch; "
                f"{item_id!r} is the id of items {first[item_id]} and {position}"
            )
        first[item_id] = position
    return ids


def render_batch(request: BatchQrRequest) -> BatchQrResponse:
    """Render every item with the shared options; any failure fails the whole batch.

    Results carry the ids of :func:`_batch_ids`, in request order.
    """
    results: list[BatchQrResult] = []
    ids = _batch_ids(request)
    for position, (item_id, item) in enumerate(zip(ids, request.items, strict=True), start=1):
        try:
            image = _render_qr(
                item.data,
                format=request.format,
                size=request.size,
                ecc=request.ecc,
                margin=request.margin,
                dark=request.dark,
                light=request.light,
            )
        except RenderError as error:
            raise RenderError(f"item {position} (id {item_id!r}): {error}") from None
        results.append(
            BatchQrResult(
                id=item_id,
                data=item.data,
                format=request.format,
                width=image.width,
                height=image.height,
                data_url=data_url(image),
            )
        )
    return BatchQrResponse(data=results, total=len(results))


# --------------------------------------------------------------------------- barcodes


class _PixelImageWriter(ImageWriter):  # type: ignore[misc]
    """python-barcode's ImageWriter with one python-barcode unit == one pixel, exactly.

    ImageWriter converts millimetres with ``mm * dpi / 25.4`` and truncates with
    ``int()``; with ``dpi=25.4`` that is *almost* the identity, but e.g.
    ``3 * 25.4 / 25.4 == 2.9999999999999996``, so bars and the canvas would randomly lose
    a pixel.  This subclass keeps python-barcode's layout (``BaseWriter.render``: bar runs,
    quiet zone, text position) and paints with integer pixel coordinates instead.

    Layout (all pixels): ``quiet_zone`` blank on both sides (already multiplied by the
    module width), bars ``module_height`` tall starting at the top edge, then, if there is
    text, ``text_distance`` of blank space and one line of DejaVu Sans Mono (bundled with
    python-barcode) sized to ``preferred_font_px`` or smaller so it fits the image width.
    """

    def __init__(self, preferred_font_px: int) -> None:
        super().__init__(format="PNG", mode="RGB")
        self._preferred_font_px = preferred_font_px
        self._font: ImageFont.FreeTypeFont | None = None

    def _fit_font(self, image_width: int) -> ImageFont.FreeTypeFont:
        font = ImageFont.truetype(self.font_path, self._preferred_font_px)
        text_width = font.getlength(self.text)
        available = image_width - 2
        if text_width > available:
            fitted = max(8, int(self._preferred_font_px * available / text_width))
            font = ImageFont.truetype(self.font_path, fitted)
        return font

    def calculate_size(self, modules_per_line: int, number_of_lines: int) -> tuple[int, int]:
        width = int(2 * self.quiet_zone + modules_per_line * self.module_width)
        height = int(self.margin_top + self.module_height * number_of_lines + self.margin_bottom)
        self._font = self._fit_font(width) if self.text else None
        if self._font is not None:
            ascent, descent = self._font.getmetrics()
            height += int(self.text_distance) + ascent + descent
        return width, height

    def _init(self, code: list[str]) -> None:
        width, height = self.calculate_size(len(code[0]), 1)
        self._image = Image.new("RGB", (width, height), self.background)
        self._draw = ImageDraw.Draw(self._image)

    def _paint_module(self, xpos: float, ypos: float, width: float, color: str) -> None:
        # The canvas already has the background colour: only bars are painted.  (The
        # spaces also come with a taller "guard" height that would bleed into the text.)
        if color == self.background:
            return
        left, top = round(xpos), round(ypos)
        right, bottom = left + round(width) - 1, top + round(self.module_height) - 1
        self._draw.rectangle((left, top, right, bottom), fill=color)

    def _paint_text(self, xpos: float, ypos: float) -> None:
        if self._font is None:
            return
        # ypos = bottom of the bars + text_distance; "ma" = centred, top at the ascender.
        self._draw.text(
            (round(xpos), round(ypos)),
            self.text,
            font=self._font,
            fill=self.foreground,
            anchor="ma",
        )


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A validated python-barcode symbol and the human-readable line printed under it."""

    symbol: Any  # barcode.base.Barcode instance (python-barcode is untyped)
    text: str


@dataclass(frozen=True, slots=True)
class _LinearType:
    id: str
    name: str
    description: str
    example: str
    prepare: Callable[[str, _PixelImageWriter], _Prepared]


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


def _prepare_ean13(data: str, writer: _PixelImageWriter) -> _Prepared:
    full = _gtin(data, "EAN-13", 13)
    return _Prepared(EAN13(full[:12], writer=writer), full)


def _prepare_ean8(data: str, writer: _PixelImageWriter) -> _Prepared:
    full = _gtin(data, "EAN-8", 8)
    return _Prepared(EAN8(full[:7], writer=writer), full)


def _prepare_upca(data: str, writer: _PixelImageWriter) -> _Prepared:
    full = _gtin(data, "UPC-A", 12)
    return _Prepared(UPCA(full[:11], writer=writer), full)


def _prepare_jan(data: str, writer: _PixelImageWriter) -> _Prepared:
    full = _gtin(data, "JAN", 13)
    if not (450 <= int(full[:3]) <= 459 or 490 <= int(full[:3]) <= 499):
        raise RenderError("JAN data must start with 450-459 or 490-499 (GS1 Japan prefixes)")
    return _Prepared(EAN13(full[:12], writer=writer), full)


def _prepare_ean14(data: str, writer: _PixelImageWriter) -> _Prepared:
    # python-barcode's own EAN14 class draws an EAN-13 pattern with 14 digits, which no
    # scanner reads (python-barcode issue #103).  A GTIN-14 is carried as GS1-128 with
    # application identifier (01), which is what "EAN-14" means on logistic labels.
    gtin = _gtin(data, "EAN-14", 14)
    return _Prepared(Gs1_128("01" + gtin, writer=writer), f"(01){gtin}")


def _strip_separators(data: str) -> str:
    return data.replace("-", "").replace(" ", "")


def _prepare_isbn13(data: str, writer: _PixelImageWriter) -> _Prepared:
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
    return _Prepared(EAN13(full[:12], writer=writer), full)


def _prepare_isbn10(data: str, writer: _PixelImageWriter) -> _Prepared:
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
    return _Prepared(EAN13(full[:12], writer=writer), full)


def _prepare_issn(data: str, writer: _PixelImageWriter) -> _Prepared:
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
    return _Prepared(EAN13(full[:12], writer=writer), full)


def _prepare_pzn(data: str, writer: _PixelImageWriter) -> _Prepared:
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
    return _Prepared(Code39("-" + full, writer=writer, add_checksum=False), f"PZN-{full}")


_CODE39_CHARS = frozenset(_code39_charset.REF)


def _prepare_code39(data: str, writer: _PixelImageWriter) -> _Prepared:
    invalid = sorted({char for char in data if char not in _CODE39_CHARS})
    if invalid:
        raise RenderError(
            "Code 39 data may only contain 0-9, upper-case A-Z, space and - . $ / + %; "
            f"not allowed: {', '.join(map(repr, invalid))}"
        )
    # No optional mod-43 check character: what is encoded is exactly what was sent.
    return _Prepared(Code39(data, writer=writer, add_checksum=False), data)


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


def _prepare_code128(data: str, writer: _PixelImageWriter) -> _Prepared:
    invalid = sorted({char for char in data if not char.isascii()})
    if invalid:
        raise RenderError(
            f"Code 128 data must be ASCII; not allowed: {', '.join(map(repr, invalid))}"
        )
    printable = "".join(char if char.isprintable() else " " for char in data)
    return _Prepared(_Code128(data, writer=writer), printable)


_FNC1 = Gs1_128.FNC1_CHAR  # "\xf1" in python-barcode's Code 128 charset


def _prepare_gs1_128(data: str, writer: _PixelImageWriter) -> _Prepared:
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
    return _Prepared(Gs1_128(data, writer=writer), data.replace(_FNC1, " "))


_CODABAR_PATTERN = re.compile(r"[A-D][0-9$:/.+\-]{2,}[A-D]")


def _prepare_itf(data: str, writer: _PixelImageWriter) -> _Prepared:
    if not re.fullmatch(r"[0-9]+", data) or len(data) % 2:
        raise RenderError(
            "ITF data must be an even number of digits (add a leading 0 to an odd count)"
        )
    if len(data) < 4:
        # Readers reject shorter ITF symbols: a partial scan of a longer one looks alike.
        raise RenderError("ITF data must be at least 4 digits")
    # narrow = 1 module, wide = 3 modules (ratio 3:1, inside the 2:1..3:1 of the spec)
    return _Prepared(ITF(data, writer=writer, narrow=1, wide=3), data)


def _prepare_codabar(data: str, writer: _PixelImageWriter) -> _Prepared:
    if not _CODABAR_PATTERN.fullmatch(data):
        raise RenderError(
            "Codabar data must start and end with one of A, B, C, D (start/stop characters) "
            "with at least 2 characters 0-9 - $ : / . + in between, e.g. A40156B"
        )
    return _Prepared(CODABAR(data, writer=writer, narrow=1, wide=3), data)


_LINEAR_TYPES: tuple[_LinearType, ...] = (
    _LinearType(
        "ean13",
        "EAN-13",
        "European/International Article Number, 13 digits; the 13th (check digit) is "
        "computed when 12 digits are sent and verified when 13 are.",
        "5901234123457",
        _prepare_ean13,
    ),
    _LinearType(
        "ean8",
        "EAN-8",
        "Short EAN for small packages: 7 digits plus check digit.",
        "96385074",
        _prepare_ean8,
    ),
    _LinearType(
        "upca",
        "UPC-A",
        "Universal Product Code (North America): 11 digits plus check digit.",
        "036000291452",
        _prepare_upca,
    ),
    _LinearType(
        "code128",
        "Code 128",
        "Compact alphanumeric barcode for any ASCII text (up to 128 characters here).",
        "Tollway-128",
        _prepare_code128,
    ),
    _LinearType(
        "code39",
        "Code 39",
        "Alphanumeric barcode: 0-9, upper-case A-Z, space and - . $ / + % "
        "(standard Code 39, no check character is added; a scanner set to Full ASCII "
        "reads e.g. +Y as y).",
        "TOLLWAY-39",
        _prepare_code39,
    ),
    _LinearType(
        "itf",
        "ITF (Interleaved 2 of 5)",
        "Numeric barcode for an even number of digits, common on cartons.",
        "12345670",
        _prepare_itf,
    ),
    _LinearType(
        "isbn13",
        "ISBN-13",
        "Book number (978/979 prefix) as an EAN-13; hyphens are allowed.",
        "978-0-306-40615-7",
        _prepare_isbn13,
    ),
    _LinearType(
        "isbn10",
        "ISBN-10",
        "Legacy 10-character book number, encoded as its 978 EAN-13; hyphens are allowed.",
        "0-306-40615-2",
        _prepare_isbn10,
    ),
    _LinearType(
        "issn",
        "ISSN",
        "Serial publication number, encoded as the EAN-13 977 + 7 digits + 00 + check digit.",
        "0317-8471",
        _prepare_issn,
    ),
    _LinearType(
        "pzn",
        "PZN",
        "German pharmaceutical number, encoded as PZN8 (Code 39 of '-' + 8 digits); "
        "8 digits, or a legacy PZN7 (6 digits, or 7 with check digit) which gets a leading 0.",
        "12345678",
        _prepare_pzn,
    ),
    _LinearType(
        "jan",
        "JAN",
        "Japanese Article Number: an EAN-13 with prefix 450-459 or 490-499.",
        "4901234567894",
        _prepare_jan,
    ),
    _LinearType(
        "ean14",
        "EAN-14 (GTIN-14)",
        "14-digit trade item number for cases and pallets, encoded as GS1-128 with "
        "application identifier (01).",
        "15400141288763",
        _prepare_ean14,
    ),
    _LinearType(
        "gs1_128",
        "GS1-128",
        "Code 128 with GS1 application identifiers, written without parentheses "
        "(e.g. 01 + GTIN-14, 17 + YYMMDD, 10 + batch); separate a variable-length value "
        "from the next identifier with FNC1 (\\u00f1 or \\u001d).",
        "01095011015300031726123110ABC123",
        _prepare_gs1_128,
    ),
    _LinearType(
        "codabar",
        "Codabar (NW-7)",
        "Numeric barcode with start/stop characters A-D, used by libraries and blood banks.",
        "A40156B",
        _prepare_codabar,
    ),
)
_LINEAR_BY_ID = {linear.id: linear for linear in _LINEAR_TYPES}

CODE_TYPES: tuple[CodeType, ...] = (
    CodeType(
        id="qr",
        name="QR Code",
        kind="2d",
        endpoint="/v1/code/qr",
        output_formats=["png", "svg"],
        description="2D matrix code for URLs and any Unicode text up to 2048 characters, "
        "with error correction level L, M, Q or H.",
        example="https://example.com",
    ),
    *(
        CodeType(
            id=linear.id,
            name=linear.name,
            kind="linear",
            endpoint="/v1/code/barcode",
            output_formats=["png"],
            description=linear.description,
            example=linear.example,
        )
        for linear in _LINEAR_TYPES
    ),
)


def _preferred_font_px(module_width: int) -> int:
    return min(48, max(12, 9 * module_width))


def render_barcode(request: BarcodeRequest) -> RenderedImage:
    """Render a linear barcode as an RGB PNG.

    Pixel layout: ``quiet_zone * module_width`` blank pixels left and right, bars exactly
    ``height`` pixels tall from the top edge, each module ``module_width`` pixels wide;
    with ``include_text`` a gap and a line of text follow (the image is taller than
    ``height``).  Bars and background are exactly ``dark`` / ``light``; the text is
    anti-aliased.
    """
    linear = _LINEAR_BY_ID.get(request.format)
    if linear is None:
        raise RenderError(f"unknown barcode format {request.format!r}")
    _check_colours(request.dark, request.light)
    font_px = _preferred_font_px(request.module_width)
    writer = _PixelImageWriter(font_px)
    try:
        prepared = linear.prepare(request.data, writer)
        options: dict[str, Any] = {
            "module_width": request.module_width,
            "module_height": request.height,
            "quiet_zone": request.quiet_zone * request.module_width,
            "margin_top": 0,
            "margin_bottom": 0,
            "text_distance": max(2, font_px // 4),
            "foreground": _hex(request.dark),
            "background": _hex(request.light),
            "write_text": request.include_text,
            "center_text": True,
        }
        image: Image.Image = prepared.symbol.render(
            options, text=prepared.text if request.include_text else None
        )
    except RenderError:
        raise
    except (BarcodeError, ValueError, KeyError, IndexError) as error:
        raise RenderError(f"invalid data for {linear.name}: {error}") from None
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return RenderedImage(buffer.getvalue(), "image/png", image.width, image.height)
