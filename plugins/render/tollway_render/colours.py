"""Colours as the requests spell them (6 hex digits, ``#`` optional), checked and converted."""

from __future__ import annotations

import re

from tollway_render.errors import RenderError

__all__ = ["check_colours", "hex_colour", "rgb"]

_HEX_COLOUR = re.compile(r"#?[0-9a-fA-F]{6}")


def hex_colour(colour: str) -> str:
    """``'#1A237E'`` / ``'1a237e'`` -> ``'#1a237e'`` (already checked by :func:`check_colours`)."""
    return "#" + colour.removeprefix("#").lower()


def rgb(colour: str) -> tuple[int, int, int]:
    """``'#1a237e'`` -> ``(26, 35, 126)``."""
    value = int(colour.removeprefix("#"), 16)
    return (value >> 16) & 0xFF, (value >> 8) & 0xFF, value & 0xFF


def check_colours(dark: str, light: str) -> None:
    """Raise :class:`RenderError` unless both are 6 hex digits and tell apart."""
    # The schemas' pattern is searched, and its '$' also matches before a final newline.
    for name, colour in (("dark", dark), ("light", light)):
        if not _HEX_COLOUR.fullmatch(colour):
            raise RenderError(f"{name} must be 6 hex digits, with or without '#'")
    if hex_colour(dark) == hex_colour(light):
        raise RenderError("dark and light colours must differ")
