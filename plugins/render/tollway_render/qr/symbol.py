"""The QR symbol of some text: segno's encoding, with its two surprises dealt with.

segno picks the mode by itself, once in a way that garbles Latin-1 text (see
:func:`_forced_mode`), and says only "data overflow" when the text does not fit; the
:class:`RenderError` raised instead tells the client how much would.
"""

from __future__ import annotations

import segno

from tollway_render.errors import RenderError

__all__ = ["make_symbol"]

# Capacity of the largest symbol (version 40) per error correction level and mode,
# ISO/IEC 18004 table 7: numeric digits, alphanumeric characters, bytes, kanji characters.
_QR_V40_CAPACITY: dict[str, dict[str, int]] = {
    "L": {"numeric": 7089, "alphanumeric": 4296, "byte": 2953, "kanji": 1817},
    "M": {"numeric": 5596, "alphanumeric": 3391, "byte": 2331, "kanji": 1435},
    "Q": {"numeric": 3993, "alphanumeric": 2420, "byte": 1663, "kanji": 1024},
    "H": {"numeric": 3057, "alphanumeric": 1852, "byte": 1273, "kanji": 784},
}
_QR_ALPHANUMERIC = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:")


def make_symbol(data: str, ecc: str) -> segno.QRCode:
    """The smallest symbol holding ``data`` at error correction level ``ecc``.

    Raises :class:`RenderError` naming the capacity when even version 40 is too small.
    """
    try:
        return segno.make_qr(data, error=ecc, mode=_forced_mode(data), boost_error=False)
    except segno.DataOverflowError:
        raise RenderError(_overflow_message(data, ecc)) from None


def _is_latin1(data: str) -> bool:
    try:
        data.encode("iso-8859-1")
    except UnicodeEncodeError:
        return False
    return True


def _forced_mode(data: str) -> str | None:
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
