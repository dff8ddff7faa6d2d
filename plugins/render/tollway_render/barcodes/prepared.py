"""What every symbology's ``prepare`` step hands to the drawing: symbol and caption."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tollway_render.barcodes.writer import PixelImageWriter

__all__ = ["Prepare", "Prepared"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A validated python-barcode symbol and the human-readable line printed under it."""

    symbol: Any  # barcode.base.Barcode instance (python-barcode is untyped)
    text: str


Prepare = Callable[[str, PixelImageWriter], Prepared]
"""Checks the request's data (:class:`RenderError` naming what is wrong) and builds the
symbol that draws with the writer."""
