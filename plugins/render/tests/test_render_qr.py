"""QR codes: every image is decoded with a real decoder; SVGs are rasterised first."""

from __future__ import annotations

import io

import pytest
import segno
import zxingcpp
from PIL import Image
from render_images import COLOURS, colours, decode_qr, rgb, to_pil

from tollway_render import Ecc, QrFormat, QrRequest, RenderError, render_qr

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
