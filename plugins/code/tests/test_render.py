"""Rendering tests: every generated image is decoded with a real decoder (zxing-cpp).

SVGs are rasterised with resvg (a self-contained wheel, no system cairo) first.  No mocks.
"""

from __future__ import annotations

import base64
import io
import typing
from typing import Any

import msgspec
import pytest
import resvg_py
import segno
import zxingcpp
from PIL import Image, ImageOps

from tollway_code.render import (
    CODE_TYPES,
    RenderedImage,
    RenderError,
    data_url,
    render_barcode,
    render_batch,
    render_qr,
)
from tollway_code.schemas import (
    BarcodeFormat,
    BarcodeRequest,
    BatchQrItem,
    BatchQrRequest,
    BatchQrResult,
    CodeType,
    Ecc,
    KeyInfo,
    QrFormat,
    QrRequest,
    TypesResponse,
    UsageResponse,
)

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


# --------------------------------------------------------------------------- QR codes

SHORT = "hi"  # fits version 1 even at ECC H, so size 50 works with any margin
URL = "https://example.com/tollway/v1/code?id=12345&lang=de"

QR_GEOMETRY = [
    (fmt, size, margin)
    for fmt in ("png", "svg")
    for size in (50, 200, 333, 1000)
    for margin in (0, 2, 10)
]


@pytest.mark.parametrize(("fmt", "size", "margin"), QR_GEOMETRY)
def test_qr_round_trip_sizes_and_margins(fmt: QrFormat, size: int, margin: int) -> None:
    index = QR_GEOMETRY.index((fmt, size, margin))
    ecc: Ecc = ("L", "M", "Q", "H")[index % 4]
    dark, light = COLOURS[index % len(COLOURS)]
    data = SHORT if size == 50 else URL
    request = QrRequest(
        data=data, format=fmt, size=size, ecc=ecc, margin=margin, dark=dark, light=light
    )
    image = render_qr(request)
    assert (image.width, image.height) == (size, size)
    pil = to_pil(image)
    assert pil.size == (size, size)
    results = decode_qr(pil, margin, light)
    assert [r.text for r in results] == [data]
    assert results[0].format == zxingcpp.BarcodeFormat.QRCode
    assert results[0].ec_level == ecc


@pytest.mark.parametrize("fmt", ["png", "svg"])
@pytest.mark.parametrize("ecc", ["L", "M", "Q", "H"])
@pytest.mark.parametrize(("dark", "light"), COLOURS)
def test_qr_ecc_and_colours(fmt: QrFormat, ecc: Ecc, dark: str, light: str) -> None:
    request = QrRequest(data=URL, format=fmt, ecc=ecc, dark=dark, light=light)
    pil = to_pil(render_qr(request))
    assert pil.size == (200, 200)
    # Exact colours, also after rasterising the SVG: no anti-aliased in-between pixels.
    assert colours(pil) == {rgb(dark), rgb(light)}
    results = decode_qr(pil, request.margin, light)
    assert [(r.text, r.ec_level) for r in results] == [(URL, ecc)]


def qr_geometry(data: str, ecc: Ecc, size: int, margin: int) -> tuple[segno.QRCode, int, int]:
    qr = segno.make_qr(data, error=ecc, boost_error=False)
    total = len(qr.matrix) + 2 * margin
    scale = size // total
    offset = (size - total * scale) // 2 + margin * scale
    return qr, scale, offset


@pytest.mark.parametrize("fmt", ["png", "svg"])
@pytest.mark.parametrize(("size", "margin"), [(333, 2), (1000, 4), (57, 0), (50, 10)])
def test_qr_modules_are_whole_pixel_blocks(fmt: QrFormat, size: int, margin: int) -> None:
    """Every module is a uniform scale x scale block at the expected place: no blurring."""
    dark, light = "#1a237e", "#fff8e1"
    request = QrRequest(
        data=SHORT, format=fmt, size=size, ecc="Q", margin=margin, dark=dark, light=light
    )
    pil = to_pil(render_qr(request))
    qr, scale, offset = qr_geometry(SHORT, "Q", size, margin)
    assert scale >= 1
    pixels = pil.load()
    assert pixels is not None
    for row_index, row in enumerate(qr.matrix):
        for column_index, module in enumerate(row):
            expected = rgb(dark) if module else rgb(light)
            x0, y0 = offset + column_index * scale, offset + row_index * scale
            block = pil.crop((x0, y0, x0 + scale, y0 + scale))
            assert colours(block) == {expected}, (row_index, column_index)
    # Everything outside the symbol is light quiet zone.
    end = offset + len(qr.matrix) * scale
    for x, y in [(0, 0), (size - 1, size - 1), (offset - 1, offset), (end, end - 1)]:
        if 0 <= x < size and 0 <= y < size and not (offset <= x < end and offset <= y < end):
            assert pixels[x, y] == rgb(light)


def test_qr_svg_document() -> None:
    request = QrRequest(data=URL, format="svg", size=333, dark="#1A237E", light="FFF8E1")
    image = render_qr(request)
    assert image.media_type == "image/svg+xml"
    svg = image.content.decode("utf-8")
    assert 'width="333" height="333"' in svg
    assert 'viewBox="0 0 333 333"' in svg
    assert 'shape-rendering="crispEdges"' in svg
    assert 'fill="#1a237e"' in svg
    assert 'fill="#fff8e1"' in svg


def test_qr_png_is_palette_or_rgb() -> None:
    image = render_qr(QrRequest(data=URL))
    assert image.media_type == "image/png"
    with Image.open(io.BytesIO(image.content)) as pil:
        assert pil.mode in ("P", "RGB")


@pytest.mark.parametrize(
    "data",
    [
        "Grüße 👋 日本",  # UTF-8 byte mode
        "日本語",  # Shift_JIS kanji mode
        "Grüße",  # ISO-8859-1 byte mode
        "éa",  # Latin-1 bytes that look like a Shift_JIS kanji (segno would pick kanji mode)
        "12345678901234567890",  # numeric mode
        "HELLO WORLD $%*+-./:",  # alphanumeric mode
    ],
)
@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_qr_unicode_and_modes_round_trip(data: str, fmt: QrFormat) -> None:
    pil = to_pil(render_qr(QrRequest(data=data, format=fmt)))
    assert [r.text for r in decode_qr(pil, 2, "ffffff")] == [data]


def test_qr_longest_data_fits_large_image() -> None:
    data = "x" * 2048
    request = QrRequest(data=data, size=1000, ecc="L")
    pil = to_pil(render_qr(request))
    assert [r.text for r in decode_qr(pil, 2, "ffffff")] == [data]


@pytest.mark.parametrize(
    ("data", "ecc", "expected"),
    [
        ("x" * 2048, "H", "at most 1273 bytes in byte mode"),
        ("x" * 1700, "Q", "at most 1663 bytes in byte mode"),
        ("A" * 2000, "H", "at most 1852 characters in alphanumeric mode"),
        ("€" * 1000, "M", "at most 2331 bytes in byte mode (got 3000 bytes as UTF-8)"),
        ("日" * 1000, "H", "at most 784 characters in kanji mode"),
    ],
)
def test_qr_data_too_long_for_ecc(data: str, ecc: Ecc, expected: str) -> None:
    with pytest.raises(RenderError, match="too long for error correction level") as info:
        render_qr(QrRequest(data=data, ecc=ecc, size=1000))
    assert expected in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_qr_size_too_small(fmt: QrFormat) -> None:
    with pytest.raises(RenderError, match=r"size 50 px is too small .* needs at least \d+ px"):
        render_qr(QrRequest(data="x" * 300, size=50, format=fmt))
    # 21 modules + 2 * 10 margin = 41 px: fits 50 px at 1 px per module
    render_qr(QrRequest(data=SHORT, size=50, margin=10, format=fmt))


def test_qr_identical_colours_rejected() -> None:
    with pytest.raises(RenderError, match="must differ"):
        render_qr(QrRequest(data=SHORT, dark="#ABCDEF", light="abcdef"))


# --------------------------------------------------------------------------- barcodes

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

LINEAR_TYPES = [code_type for code_type in CODE_TYPES if code_type.kind == "linear"]

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
    assert {code_type.id for code_type in LINEAR_TYPES} == set(LINEAR_EXPECTED)


@pytest.mark.parametrize("variant", range(len(BARCODE_VARIANTS)))
@pytest.mark.parametrize("code_type", LINEAR_TYPES, ids=lambda code_type: code_type.id)
def test_barcode_catalog_examples_decode(code_type: CodeType, variant: int) -> None:
    request = BarcodeRequest(
        data=code_type.example,
        format=typing.cast(BarcodeFormat, code_type.id),
        **BARCODE_VARIANTS[variant],
    )
    image = render_barcode(request)
    pil = check_barcode_image(image, request)
    expected_format, expected_text = LINEAR_EXPECTED[code_type.id]
    # Decode restricted to the expected symbology: a hit proves it is a valid symbol of
    # that kind (e.g. UPC-A = EAN-13 with leading 0, PZN = Code 39 "-" + valid PZN8).
    results = decode_linear(pil, request, expected_format)
    assert [(r.format, r.text) for r in results] == [(expected_format, expected_text)]
    if code_type.id in GS1_IDS:
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


@pytest.mark.parametrize("colour", ["000000\n", "0000000", "#00000g", " 000000"])
def test_colours_must_be_exactly_six_hex_digits(colour: str) -> None:
    # Built directly, as routes do after validation: the renderer checks in full anyway,
    # since the schemas' searched pattern lets a final newline through.
    with pytest.raises(RenderError, match="6 hex digits"):
        render_qr(QrRequest(data="x", dark=colour))
    with pytest.raises(RenderError, match="6 hex digits"):
        render_barcode(BarcodeRequest(data="Tollway", format="code128", light=colour))


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


# --------------------------------------------------------------------------- batch


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_batch_round_trip(fmt: QrFormat) -> None:
    items = [
        BatchQrItem(data="first"),
        BatchQrItem(id="sku-42", data="Grüße 👋 日本"),
        BatchQrItem(data=URL),
    ]
    request = BatchQrRequest(items=items, format=fmt, size=250, dark="#1a237e", light="fff8e1")
    response = render_batch(request)
    assert response.total == 3
    assert [result.id for result in response.data] == ["1", "sku-42", "3"]
    media_type = "image/png" if fmt == "png" else "image/svg+xml"
    for item, result in zip(items, response.data, strict=True):
        assert (result.data, result.format, result.width, result.height) == (
            item.data,
            fmt,
            250,
            250,
        )
        prefix = f"data:{media_type};base64,"
        assert result.data_url.startswith(prefix)
        content = base64.b64decode(result.data_url.removeprefix(prefix), validate=True)
        pil = to_pil(RenderedImage(content, media_type, 250, 250))
        assert pil.size == (250, 250)
        assert [r.text for r in decode_qr(pil, 2, "fff8e1")] == [item.data]
    encoded = msgspec.json.decode(msgspec.json.encode(response))
    assert set(encoded["data"][0]) == {"id", "data", "format", "width", "height", "dataUrl"}


def test_batch_error_names_the_item() -> None:
    request = BatchQrRequest(
        items=[BatchQrItem(data="ok"), BatchQrItem(id="big", data="x" * 2048)], ecc="H"
    )
    with pytest.raises(RenderError, match=r"^item 2 \(id 'big'\): data is too long"):
        render_batch(request)


def test_data_url() -> None:
    image = RenderedImage(b"\x89PNG-bytes", "image/png", 1, 1)
    assert data_url(image) == "data:image/png;base64," + base64.b64encode(b"\x89PNG-bytes").decode()


# --------------------------------------------------------------------------- catalog


def test_catalog() -> None:
    ids = [code_type.id for code_type in CODE_TYPES]
    assert len(CODE_TYPES) >= 11
    assert len(ids) == len(set(ids))
    assert CODE_TYPES[0].id == "qr"
    assert CODE_TYPES[0].endpoint == "/v1/code/qr"
    assert set(CODE_TYPES[0].output_formats) == {"png", "svg"}
    assert set(ids[1:]) == set(typing.get_args(BarcodeFormat))
    for code_type in LINEAR_TYPES:
        assert code_type.endpoint == "/v1/code/barcode"
        assert code_type.output_formats == ["png"]
        assert code_type.name
        assert code_type.description
        assert code_type.example
    qr_example = CODE_TYPES[0].example
    pil = to_pil(render_qr(QrRequest(data=qr_example)))
    assert [r.text for r in decode_qr(pil, 2, "ffffff")] == [qr_example]
    body = msgspec.json.encode(TypesResponse(data=list(CODE_TYPES), total=len(CODE_TYPES)))
    assert msgspec.json.decode(body, type=TypesResponse).total == len(CODE_TYPES)


# --------------------------------------------------------------------------- schemas


def test_request_defaults_from_json() -> None:
    qr = msgspec.json.decode(b'{"data": "x"}', type=QrRequest)
    assert (qr.format, qr.size, qr.ecc, qr.margin, qr.dark, qr.light) == (
        "png",
        200,
        "M",
        2,
        "000000",
        "ffffff",
    )
    barcode = msgspec.json.decode(b'{"data": "x", "format": "code128"}', type=BarcodeRequest)
    assert (
        barcode.module_width,
        barcode.height,
        barcode.quiet_zone,
        barcode.include_text,
        barcode.dark,
        barcode.light,
    ) == (2, 100, 10, True, "000000", "ffffff")
    batch = msgspec.json.decode(b'{"items": [{"data": "x"}]}', type=BatchQrRequest)
    assert batch.items == [BatchQrItem(data="x", id=None)]
    assert (batch.format, batch.size, batch.ecc, batch.margin) == ("png", 200, "M", 2)
    ok = msgspec.convert({"data": "x", "dark": "#1A237E", "light": "fff8e1"}, QrRequest)
    assert ok.dark == "#1A237E"


@pytest.mark.parametrize(
    ("struct", "payload"),
    [
        (QrRequest, {"data": "x", "size": 49}),
        (QrRequest, {"data": "x", "size": 1001}),
        (QrRequest, {"data": "x", "dark": "12345"}),
        (QrRequest, {"data": "x", "light": "#12345g"}),
        (QrRequest, {"data": "x", "dark": "##123456"}),
        (QrRequest, {"data": "x", "ecc": "X"}),
        (QrRequest, {"data": "x", "format": "jpg"}),
        (QrRequest, {"data": "x", "margin": 11}),
        (QrRequest, {"data": "x", "margin": -1}),
        (QrRequest, {"data": ""}),
        (QrRequest, {"data": "x" * 2049}),
        (QrRequest, {"data": "x", "colour": "red"}),
        (QrRequest, {"size": 200}),
        (BarcodeRequest, {"data": "x", "format": "qr"}),
        (BarcodeRequest, {"data": "x"}),
        (BarcodeRequest, {"data": "x" * 129, "format": "code128"}),
        (BarcodeRequest, {"data": "x", "format": "code128", "module_width": 0}),
        (BarcodeRequest, {"data": "x", "format": "code128", "module_width": 11}),
        (BarcodeRequest, {"data": "x", "format": "code128", "height": 9}),
        (BarcodeRequest, {"data": "x", "format": "code128", "height": 601}),
        (BarcodeRequest, {"data": "x", "format": "code128", "quiet_zone": 51}),
        (BarcodeRequest, {"data": "x", "format": "code128", "include_text": "yes"}),
        (BarcodeRequest, {"data": "x", "format": "code128", "dark": "black"}),
        (BarcodeRequest, {"data": "x", "format": "code128", "size": 200}),
        (BatchQrRequest, {"items": []}),
        (BatchQrRequest, {"items": [{"data": "x"}] * 101}),
        (BatchQrRequest, {"items": [{"data": "x", "id": "i" * 65}]}),
        (BatchQrRequest, {"items": [{"data": ""}]}),
        (BatchQrRequest, {"items": [{"data": "x", "name": "n"}]}),
        (BatchQrRequest, {"items": [{"data": "x"}], "ecc": "X"}),
        (BatchQrRequest, {"items": [{"data": "x"}], "unknown": 1}),
    ],
)
def test_request_validation(struct: type[msgspec.Struct], payload: dict[str, Any]) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(payload, struct)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(msgspec.json.encode(payload), type=struct)


def test_batch_limits_accepted() -> None:
    request = msgspec.convert(
        {"items": [{"data": "x", "id": "i" * 64}] * 100, "size": 1000, "margin": 10},
        BatchQrRequest,
    )
    assert len(request.items) == 100


def test_usage_response_shape() -> None:
    usage = UsageResponse(
        product="code",
        plan="free",
        limit=1000,
        used=10,
        remaining=990,
        window_start="2025-01-01T00:00:00Z",
        resets_at="2025-02-01T00:00:00Z",
        key=KeyInfo(id=1, prefix="tw_live_ab", name="default"),
    )
    decoded = msgspec.json.decode(msgspec.json.encode(usage), type=UsageResponse)
    assert decoded == usage
    assert msgspec.json.decode(msgspec.json.encode(usage))["key"] == {
        "id": 1,
        "prefix": "tw_live_ab",
        "name": "default",
    }


def test_batch_result_wire_name() -> None:
    result = BatchQrResult(id="1", data="x", format="png", width=1, height=1, data_url="d")
    assert b'"dataUrl":"d"' in msgspec.json.encode(result)
