"""Reading the caller's image and writing the result (Pillow; blocking, so run in a
worker thread).

The format is what Pillow recognises in the bytes, never what a header or a file
name claims. Only JPEG, PNG and WebP are accepted: anything else is an
:class:`ImageRejected` (422), and a colour that is not one an :class:`InvalidColour`
(400), each with the message the caller gets.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from dataclasses import dataclass
from typing import Literal

from PIL import Image, ImageOps, UnidentifiedImageError

from tollway import BadRequest, UnprocessableEntity

OutputFormat = Literal["png", "webp"]
OutputSize = Literal["preview", "full"]

ACCEPTED_FORMATS = {"JPEG": "JPEG", "PNG": "PNG", "WEBP": "WebP"}
PREVIEW_PIXELS = 250_000
"""``output_size=preview``: at most 0.25 megapixel."""
MEDIA_TYPES: dict[str, str] = {"png": "image/png", "webp": "image/webp"}

_HEX_COLOUR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")


class ImageRejected(UnprocessableEntity):
    """The bytes are not an image this product accepts; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Unsupported image: {reason}")


class InvalidColour(BadRequest):
    """A ``bg_color`` that is not a hex colour."""

    def __init__(self, text: str) -> None:
        super().__init__(
            f"Invalid request body: bg_color {text!r} is not a hex colour such as #ffffff or 81d4fa"
        )


@dataclass(frozen=True, slots=True)
class Rendered:
    content: bytes
    media_type: str
    width: int
    height: int


def parse_colour(text: str) -> tuple[int, int, int]:
    """``#rgb``, ``#rrggbb``, with or without ``#``; raises :class:`InvalidColour`."""
    match = _HEX_COLOUR.match(text.strip())
    if match is None:
        raise InvalidColour(text)
    digits = match.group(1)
    if len(digits) == 3:
        digits = "".join(digit * 2 for digit in digits)
    red, green, blue = (int(digits[index : index + 2], 16) for index in (0, 2, 4))
    return red, green, blue


def decode(data: bytes, *, max_pixels: int) -> Image.Image:
    """The image in ``data`` as RGB, upright (EXIF orientation applied), first frame
    only; raises :class:`ImageRejected`."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            kind = ACCEPTED_FORMATS.get(image.format or "")
            if kind is None:
                named = image.format or "unknown"
                raise ImageRejected(
                    f"unsupported image format {named}: send JPEG, PNG or WebP"
                ) from None
            width, height = image.size
            if width * height > max_pixels:
                raise ImageRejected(
                    f"image is {width}x{height} pixels, over the limit of "
                    f"{max_pixels / 1e6:g} megapixels"
                )
            image.load()
            upright = ImageOps.exif_transpose(image)
    except ImageRejected:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ImageRejected("not a JPEG, PNG or WebP image") from None
    except (OSError, ValueError, SyntaxError) as error:
        raise ImageRejected(f"the image cannot be decoded ({error})") from None
    if upright.mode == "RGB":
        return upright
    if upright.mode in ("RGBA", "LA", "PA") or "transparency" in upright.info:
        # Transparent pixels count as white, not as whatever colour they hide.
        rgba = upright.convert("RGBA")
        canvas = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(canvas, rgba).convert("RGB")
    return upright.convert("RGB")


def preview_size(width: int, height: int) -> tuple[int, int]:
    """The largest size with the same aspect ratio and at most 0.25 megapixel."""
    if width * height <= PREVIEW_PIXELS:
        return width, height
    scale = math.sqrt(PREVIEW_PIXELS / (width * height))
    return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


def fit(image: Image.Image, output_size: OutputSize) -> Image.Image:
    """``image`` reduced for a preview; unchanged for ``full``."""
    if output_size == "full":
        return image
    size = preview_size(*image.size)
    return image if size == image.size else image.resize(size, Image.Resampling.LANCZOS)


def finish(
    cut_out: Image.Image, output_format: OutputFormat, bg_color: tuple[int, int, int] | None
) -> Rendered:
    """The cut-out over ``bg_color`` (opaque RGB) or transparent (RGBA), encoded."""
    image = cut_out.convert("RGBA")
    if bg_color is not None:
        background = Image.new("RGBA", image.size, (*bg_color, 255))
        image = Image.alpha_composite(background, image).convert("RGB")
    buffer = io.BytesIO()
    if output_format == "png":
        image.save(buffer, format="PNG")
    else:
        image.save(buffer, format="WEBP", quality=90, method=4)
    return Rendered(buffer.getvalue(), MEDIA_TYPES[output_format], image.width, image.height)
