"""Linear barcodes: geometry and colours checked pixel by pixel, every symbol decoded
with a real decoder restricted to its symbology."""

from __future__ import annotations

import typing
from typing import Any

import pytest
import zxingcpp
from PIL import Image, ImageOps
from render_images import colours, decode, padded, rgb, to_pil

from tollway_render import (
    LINEAR_TYPES,
    BarcodeFormat,
    BarcodeRequest,
    LinearType,
    RenderedImage,
    RenderError,
    render_barcode,
)

# Expected decode of every catalog example: (zxing format, decoded text in Plain mode).
LINEAR_EXPECTED: dict[str, tuple[Any, str]] = {
    "ean13": (zxingcpp.BarcodeFormat.EAN13, "5901234123457"),
    "ean8": (zxingcpp.BarcodeFormat.EAN8, "96385074"),
    # zxing-cpp 3 reports UPC-A in its EAN-13 form (leading 0).
    "upca": (zxingcpp.BarcodeFormat.UPCA, "0036000291452"),
    "code128": (zxingcpp.BarcodeFormat.Code128, "Tollway-128"),
    "code39": (zxingcpp.BarcodeFormat.Code39, "TOLLWAY-39"),
    "itf": (zxingcpp.BarcodeFormat.ITF, "12345670"),
    "isbn13": (zxingcpp.BarcodeFormat.EAN13, "9780306406157"),
    "isbn10": (zxingcpp.BarcodeFormat.EAN13, "9780306406157"),
    "issn": (zxingcpp.BarcodeFormat.EAN13, "9770317847001"),
    "pzn": (zxingcpp.BarcodeFormat.PZN, "-12345678"),
    "jan": (zxingcpp.BarcodeFormat.EAN13, "4901234567894"),
    "ean14": (zxingcpp.BarcodeFormat.Code128, "0115400141288763"),  # GS1-128, AI (01)
    "gs1_128": (zxingcpp.BarcodeFormat.Code128, "01095011015300031726123110ABC123"),
    "codabar": (zxingcpp.BarcodeFormat.Codabar, "A40156B"),
}
GS1_IDS = {"ean14", "gs1_128"}

BARCODE_VARIANTS: list[dict[str, Any]] = [
    {},
    {"module_width": 1, "height": 40, "quiet_zone": 10},
    {"module_width": 4, "height": 150, "quiet_zone": 0, "include_text": False},
    {"module_width": 3, "height": 60, "dark": "#1a237e", "light": "#fff8e1"},
    {"module_width": 2, "height": 10, "quiet_zone": 50, "dark": "004D40", "light": "FFFFFF"},
]


def check_barcode_image(image: RenderedImage, request: BarcodeRequest) -> Image.Image:
    """Geometry and colour checks shared by all barcode tests; returns the RGB image."""
    assert image.media_type == "image/png"
    pil = to_pil(image)
    assert pil.size == (image.width, image.height)
    dark, light = rgb(request.dark), rgb(request.light)
    quiet = request.quiet_zone * request.module_width
    assert image.width % request.module_width == 0
    if request.include_text:
        assert image.height > request.height
        found = colours(pil)
        assert {dark, light} <= found  # plus anti-aliased text pixels
    else:
        assert image.height == request.height
        assert colours(pil) == {dark, light}
    # Bars: every row of the bar area is identical and exactly two-coloured, starting
    # right after the left quiet zone and ending right before the right one.
    bars = pil.crop((0, 0, image.width, request.height))
    assert colours(bars) == {dark, light}
    first_row = bars.crop((0, 0, image.width, 1))
    assert bars.crop((0, request.height - 1, image.width, request.height)).tobytes() == (
        first_row.tobytes()
    )
    raw = first_row.tobytes()
    row = [tuple(raw[i : i + 3]) for i in range(0, len(raw), 3)]
    dark_columns = [x for x, pixel in enumerate(row) if pixel == dark]
    assert dark_columns[0] == quiet
    assert dark_columns[-1] == image.width - quiet - 1
    if request.include_text:
        gap = pil.crop((0, request.height, image.width, request.height + 1))
        assert colours(gap) == {light}
    return pil


def decode_linear(pil: Image.Image, request: BarcodeRequest, formats: Any) -> list[Any]:
    # Linear symbols need a quiet zone as well; pad when the request asked for none.
    if request.quiet_zone < 10:
        pil = padded(pil, request.light, border=10 * request.module_width)
    return decode(pil, formats)


def test_expectations_cover_catalog() -> None:
    assert {linear.id for linear in LINEAR_TYPES} == set(LINEAR_EXPECTED)


def test_every_barcode_format_is_in_the_catalog() -> None:
    ids = [linear.id for linear in LINEAR_TYPES]
    assert len(ids) == len(set(ids))
    assert set(ids) == set(typing.get_args(BarcodeFormat))


@pytest.mark.parametrize("variant", range(len(BARCODE_VARIANTS)))
@pytest.mark.parametrize("linear", LINEAR_TYPES, ids=lambda linear: linear.id)
def test_barcode_catalog_examples_decode(linear: LinearType, variant: int) -> None:
    request = BarcodeRequest(
        data=linear.example,
        format=typing.cast(BarcodeFormat, linear.id),
        **BARCODE_VARIANTS[variant],
    )
    image = render_barcode(request)
    pil = check_barcode_image(image, request)
    expected_format, expected_text = LINEAR_EXPECTED[linear.id]
    # Decode restricted to the expected symbology: a hit proves it is a valid symbol of
    # that kind (e.g. UPC-A = EAN-13 with leading 0, PZN = Code 39 "-" + valid PZN8).
    results = decode_linear(pil, request, expected_format)
    assert [(r.format, r.text) for r in results] == [(expected_format, expected_text)]
    if linear.id in GS1_IDS:
        assert results[0].symbology_identifier == "]C1"  # FNC1 in first position = GS1
    # Unrestricted decoding finds the same single symbol with the same text.
    assert [r.text for r in decode_linear(pil, request, None)] == [expected_text]


@pytest.mark.parametrize(
    ("fmt", "data", "expected_text"),
    [
        ("ean13", "590123412345", "5901234123457"),  # check digit computed
        ("ean13", "4006381333931", "4006381333931"),
        ("ean8", "9638507", "96385074"),
        ("upca", "03600029145", "0036000291452"),
        ("jan", "456995111617", "4569951116179"),
        ("isbn13", "979-10-90636-07-1", "9791090636071"),
        ("isbn13", "978030640615", "9780306406157"),
        ("isbn10", "080442957X", "9780804429573"),  # check character X
        ("isbn10", "0-8044-2957-x", "9780804429573"),
        ("isbn10", "030640615", "9780306406157"),
        ("issn", "2049-3630", "9772049363002"),
        ("issn", "0317847", "9770317847001"),
        ("pzn", "1234562", "-01234562"),  # legacy PZN7 with check digit -> PZN8
        ("pzn", "123456", "-01234562"),  # legacy PZN7 without check digit
        ("pzn", "PZN-12345678", "-12345678"),
        ("ean14", "1540014128876", "0115400141288763"),
        (
            "gs1_128",
            "0109501101530003\x1d10AB-12\xf12112345",
            "0109501101530003\x1d10AB-12\x1d2112345",
        ),
        ("gs1_128", "0109501101530003", "0109501101530003"),
        ("code128", "lower/UPPER 0123456789 ~{|}`", "lower/UPPER 0123456789 ~{|}`"),
        ("code128", "tab\tseparated", "tab\tseparated"),
        ("code128", "9" * 128, "9" * 128),
        ("code128", "99123", "99123"),  # python-barcode 0.16.1 drops a leading "99"
        ("code128", "990587/9-35{", "990587/9-35{"),
        ("code128", "7", "7"),
        ("code39", "A", "A"),
        ("code39", "$ /+%.-", "$ /+%.-"),
        ("itf", "1234", "1234"),
        ("itf", "15400141288763", "15400141288763"),  # ITF-14
        ("codabar", "D$:/.+-C", "D$:/.+-C"),
    ],
)
def test_barcode_data_normalisation(fmt: BarcodeFormat, data: str, expected_text: str) -> None:
    request = BarcodeRequest(data=data, format=fmt, module_width=2)
    pil = check_barcode_image(render_barcode(request), request)
    assert [r.text for r in decode_linear(pil, request, None)] == [expected_text]


@pytest.mark.parametrize(
    ("fmt", "data", "message"),
    [
        ("ean13", "59012341234AB", "EAN-13 data must be 12 or 13 digits"),
        ("ean13", "59012341234", "EAN-13 data must be 12 or 13 digits"),
        ("ean13", "5901234123458", "invalid check digit for EAN-13 5901234123458: expected 7"),
        ("ean13", "٥٩٠١٢٣٤١٢٣٤٥٧", "EAN-13 data must be 12 or 13 digits"),  # non-ASCII digits
        ("ean8", "123456", "EAN-8 data must be 7 or 8 digits"),
        ("ean8", "96385075", "invalid check digit for EAN-8"),
        ("upca", "0360002914", "UPC-A data must be 11 or 12 digits"),
        ("upca", "036000291453", "invalid check digit for UPC-A"),
        ("jan", "5901234123457", "450-459 or 490-499"),
        ("isbn13", "9770317847001", "must start with 978 or 979"),
        ("isbn13", "9790306406157", "979 must continue with 1 or 8"),
        ("isbn13", "9780306406158", "invalid check digit for ISBN-13"),
        ("isbn10", "03064061", "ISBN-10 data must be 9 digits"),
        ("isbn10", "0306406153", "invalid check digit for ISBN-10 0306406153: expected 2"),
        ("issn", "0317", "ISSN data must be 7 digits"),
        ("issn", "0317-8472", "invalid check digit for ISSN"),
        ("pzn", "12345", "PZN data must be 8 digits"),
        ("pzn", "12345679", "invalid check digit for PZN"),
        ("pzn", "10000060", "check digit would be 10"),
        ("ean14", "1540014128876X", "EAN-14 data must be 13 or 14 digits"),
        ("ean14", "15400141288764", "invalid check digit for EAN-14"),
        ("code128", "Grüße", "Code 128 data must be ASCII; not allowed: 'ß', 'ü'"),
        ("code128", "price: 5€", "must be ASCII"),
        ("code39", "lower case", "Code 39 data may only contain"),
        ("code39", "A*B", "not allowed: '*'"),
        ("itf", "12345", "even number of digits"),
        ("itf", "12AB", "even number of digits"),
        ("itf", "12", "at least 4 digits"),
        ("codabar", "40156", "must start and end with one of A, B, C, D"),
        ("codabar", "A4x0B", "must start and end with one of A, B, C, D"),
        ("codabar", "A1B", "at least 2 characters"),
        ("gs1_128", "(01)09501101530003", "must not contain parentheses"),
        ("gs1_128", "ABC123", "must start with an application identifier"),
        ("gs1_128", "10ABCü", "printable ASCII"),
    ],
)
def test_barcode_invalid_data(fmt: BarcodeFormat, data: str, message: str) -> None:
    request = BarcodeRequest(data=data, format=fmt)
    with pytest.raises(RenderError) as info:
        render_barcode(request)
    assert message in str(info.value)


def test_code39_is_standard_not_full_ascii() -> None:
    # "+Y" is two standard Code 39 characters; Full ASCII (Code 39 Extended) readers
    # would turn it into "y".  zxing guesses Extended unless told it is standard.
    request = BarcodeRequest(data="3+YB0-", format="code39")
    pil = check_barcode_image(render_barcode(request), request)
    results = decode(pil, zxingcpp.BarcodeFormat.Code39Std)
    assert [(r.format, r.text) for r in results] == [(zxingcpp.BarcodeFormat.Code39, "3+YB0-")]


def test_barcode_unknown_format_and_identical_colours() -> None:
    with pytest.raises(RenderError, match="unknown barcode format 'qr'"):
        render_barcode(BarcodeRequest(data="x", format="qr"))  # type: ignore[arg-type]
    with pytest.raises(RenderError, match="must differ"):
        render_barcode(
            BarcodeRequest(data="Tollway", format="code128", dark="111111", light="#111111")
        )


def test_barcode_text_fits_and_is_readable() -> None:
    """With text, the image grows by a gap plus one line of at least 8 px glyphs."""
    narrow = BarcodeRequest(data="9" * 128, format="code128", module_width=1, quiet_zone=0)
    image = render_barcode(narrow)
    pil = check_barcode_image(image, narrow)
    text_area = pil.crop((0, narrow.height, image.width, image.height))
    bbox = ImageOps.invert(text_area).getbbox()  # bounding box of the (dark) text
    assert bbox is not None
    left, top, right, bottom = bbox
    assert left >= 0  # not clipped at the edges
    assert right <= image.width
    assert bottom - top >= 6  # digit height of an 8 px font or larger
