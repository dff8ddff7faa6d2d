"""Reading rendered images back: Pillow for pixels, resvg to rasterise SVGs (a
self-contained wheel, no system cairo), zxing-cpp as a real decoder. No mocks."""

from __future__ import annotations

import io
import typing
from typing import Any

import resvg_py
import zxingcpp
from PIL import Image, ImageOps

from tollway_render import RenderedImage

RGB = tuple[int, int, int]

COLOURS = [
    ("000000", "ffffff"),
    ("#1a237e", "#fff8e1"),  # dark indigo on cream
    ("#B71C1C", "E0F7FA"),  # upper-case hex, mixed '#' usage
]


def rgb(colour: str) -> RGB:
    value = int(colour.removeprefix("#"), 16)
    return (value >> 16) & 0xFF, (value >> 8) & 0xFF, value & 0xFF


def to_pil(image: RenderedImage) -> Image.Image:
    """The rendered image as an RGB Pillow image (SVGs rasterised at their natural size)."""
    if image.media_type == "image/svg+xml":
        png = bytes(resvg_py.svg_to_bytes(svg_string=image.content.decode()))
    else:
        assert image.media_type == "image/png"
        png = image.content
    with Image.open(io.BytesIO(png)) as opened:
        assert opened.format == "PNG"
        return opened.convert("RGB")


def colours(image: Image.Image) -> set[RGB]:
    assert image.mode == "RGB"
    found = image.getcolors(maxcolors=1 << 16)
    assert found is not None
    return {typing.cast(RGB, colour) for _count, colour in found}


def padded(image: Image.Image, light: str, border: int) -> Image.Image:
    return ImageOps.expand(image, border=border, fill=rgb(light))


def decode(image: Image.Image, formats: Any = None) -> list[Any]:
    kwargs: dict[str, Any] = {"text_mode": zxingcpp.TextMode.Plain}
    if formats is not None:
        kwargs["formats"] = formats
    return list(zxingcpp.read_barcodes(image, **kwargs))


def decode_qr(image: Image.Image, margin: int, light: str) -> list[Any]:
    # A QR code needs a light quiet zone around its finder patterns to be *detected*;
    # with margin 0 the symbol touches the image edge (valid output: the caller puts it
    # on their own background), so emulate that background before decoding.
    if margin == 0:
        image = padded(image, light, border=max(8, image.width // 10))
    return decode(image, zxingcpp.BarcodeFormat.QRCode)
