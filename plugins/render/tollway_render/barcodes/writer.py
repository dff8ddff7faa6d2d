"""python-barcode's image writer, made to draw in whole pixels."""

from __future__ import annotations

from barcode.writer import ImageWriter  # type: ignore[import-untyped]
from PIL import Image, ImageDraw, ImageFont

__all__ = ["PixelImageWriter"]


class PixelImageWriter(ImageWriter):  # type: ignore[misc]
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
