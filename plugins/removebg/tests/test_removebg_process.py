"""POST /v1/removebg/process: inline and URL images, output options, every refusal."""

from __future__ import annotations

import base64
import io
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from conftest import ImageServer, Page
from PIL import Image
from removebg_setup import API, b64, encoded, picture, removebg_setup, scene

from tollway import utcnow
from tollway.testing import GatewayFactory


async def test_an_inline_image_is_cut_out_and_served_at_its_url(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        before = utcnow()
        body = await setup.process(image_base64=b64(picture((320, 240))))
        assert body["id"].startswith("img_")
        assert (body["width"], body["height"], body["credits_used"]) == (320, 240, 1)
        assert body["result_base64"] is None
        expires = body["expires_at"]
        download = await setup.client.get(body["result_url"])
    assert download.status_code == 200
    assert download.headers["content-type"] == "image/png"
    image = Image.open(io.BytesIO(download.content))
    assert (image.format, image.mode, image.size) == ("PNG", "RGBA", (320, 240))
    alpha = np.array(image)[:, :, 3]
    assert alpha[120, 160] == 255  # the disc
    assert alpha[5, 5] == 0  # the background
    assert expires.startswith(str((before + timedelta(days=1)).date()))


@pytest.mark.parametrize(
    ("kind", "options"), [("JPEG", {"quality": 95}), ("WEBP", {}), ("PNG", {})]
)
async def test_jpeg_png_and_webp_are_accepted(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, kind: str, options: dict[str, int]
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        image, _ = scene((200, 150))
        body = await setup.process(image_base64=b64(encoded(image, kind, **options)))
    assert (body["width"], body["height"]) == (200, 150)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"output_format": "png"},
        {"image_url": "https://example.com/a.png", "image_base64": "AAAA"},
    ],
)
async def test_exactly_one_image_source_else_400(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, body: dict[str, str]
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        answer = await setup.process(expect=400, **body)
        quota = await setup.get("/quota")
    assert "exactly one of image_url and image_base64" in answer["detail"]
    assert quota["credits_used"] == quota["credits_reserved"] == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"image_base64": "not base64!"}, "not valid base64"),
        ({"image_base64": "QUJD", "output_format": "gif"}, "output_format"),
        ({"image_base64": "QUJD", "output_size": "huge"}, "output_size"),
        ({"image_base64": "QUJD", "bg_color": "zzz"}, "not a hex colour"),
        ({"image_base64": "QUJD", "bg_color": "#12345"}, "not a hex colour"),
        ({"image_url": None}, "image_url"),
        ({"image_url": "ftp://example.com/a.png"}, "http:// or https://"),
        ({"image_url": "http://user:secret@example.com/a.png"}, "credentials"),
        ({"image_base64": "QUJD", "colour": "red"}, "colour"),
    ],
)
async def test_invalid_values_are_400_naming_the_problem(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, body: dict[str, str], message: str
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        answer = await setup.process(expect=400, **body)
    assert message in answer["detail"]


async def test_an_image_over_10_mb_decoded_is_413(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    just_over = base64.b64encode(bytes(10 * 1024 * 1024 + 3)).decode()
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        answer = await setup.process(expect=413, image_base64=just_over)
        # A body too large to hold even that is refused by the server, in JSON too.
        huge = await setup.client.post(
            API + "/process",
            content=b'{"image_base64": "' + b"A" * 15_000_000 + b'"}',
            headers={**setup.owner.headers, "Content-Type": "application/json"},
        )
        quota = await setup.get("/quota")
    assert "more than 10 MB" in answer["detail"]
    assert huge.status_code == 413
    assert huge.headers["content-type"].startswith("application/json")
    assert "detail" in huge.json()
    assert quota["credits_used"] == quota["credits_reserved"] == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (encoded(scene((40, 30))[0], "GIF"), "unsupported image format GIF"),
        (encoded(scene((40, 30))[0], "BMP"), "unsupported image format BMP"),
        (b"%PDF-1.4 definitely not an image", "not a JPEG, PNG or WebP image"),
        (picture((320, 240))[:300], "cannot be decoded"),
    ],
)
async def test_other_formats_and_broken_images_are_422_and_cost_nothing(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, data: bytes, message: str
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        answer = await setup.process(expect=422, image_base64=b64(data))
        quota = await setup.get("/quota")
    assert message in answer["detail"]
    assert quota["credits_used"] == quota["credits_reserved"] == 0


async def test_images_over_the_pixel_limit_are_422(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    settings = {"max_megapixels": 0.01}
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=settings) as setup:
        answer = await setup.process(expect=422, image_base64=b64(picture((200, 100))))
    assert "over the limit of 0.01 megapixels" in answer["detail"]


async def test_webp_output(gateway_factory: GatewayFactory, removebg_tiny_model: Path) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        body = await setup.process(image_base64=b64(picture()), output_format="webp")
        download = await setup.client.get(body["result_url"])
    assert download.headers["content-type"] == "image/webp"
    image = Image.open(io.BytesIO(download.content))
    assert (image.format, image.mode) == ("WEBP", "RGBA")


async def test_preview_is_at_most_a_quarter_megapixel_with_the_aspect_kept(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        preview = await setup.process(image_base64=b64(picture((1000, 800))), output_size="preview")
        small = await setup.process(image_base64=b64(picture((300, 200))), output_size="preview")
        full = await setup.process(image_base64=b64(picture((1000, 800))), output_size="full")
        downloaded = await setup.client.get(preview["result_url"])
    width, height = preview["width"], preview["height"]
    assert width * height <= 250_000
    assert width * height > 249_000
    assert abs(width / height - 1.25) < 0.005
    assert Image.open(io.BytesIO(downloaded.content)).size == (width, height)
    assert (small["width"], small["height"]) == (300, 200)
    assert (full["width"], full["height"]) == (1000, 800)


@pytest.mark.parametrize("colour", ["#00ff00", "00FF00", "#0f0", "0f0"])
async def test_bg_color_fills_the_background(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, colour: str
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        body = await setup.process(image_base64=b64(picture()), bg_color=colour)
        download = await setup.client.get(body["result_url"])
    image = Image.open(io.BytesIO(download.content))
    assert image.mode == "RGB"
    assert image.getpixel((5, 5)) == (0, 255, 0)
    red, green, blue = image.getpixel((160, 120))  # type: ignore[misc]
    assert red > 200
    assert green < 40
    assert blue < 50


async def test_return_base64_answers_inline_and_keeps_nothing(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        body = await setup.process(image_base64=b64(picture()), return_base64=True)
        quota = await setup.get("/quota")
    assert body["result_url"] is None
    assert body["expires_at"] is None
    image = Image.open(io.BytesIO(base64.b64decode(body["result_base64"])))
    assert (image.format, image.size) == ("PNG", (320, 240))
    assert quota["credits_used"] == 1


async def test_an_inline_result_over_5_mb_is_refused_and_not_charged(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    # Noisy red nearly everywhere: foreground that compresses badly (and a grey frame,
    # since a picture without any background gives the model nothing to tell apart).
    rng = np.random.default_rng(3)
    noise = np.stack(
        [rng.integers(190, 256, (1600, 2000)), *rng.integers(0, 60, (2, 1600, 2000))], axis=-1
    ).astype(np.uint8)
    noise[:100], noise[-100:], noise[:, :100], noise[:, -100:] = 128, 128, 128, 128
    source = encoded(Image.fromarray(noise), "PNG")
    assert len(source) < 10 * 1024 * 1024
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        answer = await setup.process(expect=422, image_base64=b64(source), return_base64=True)
        quota = await setup.get("/quota")
        stored = await setup.process(image_base64=b64(source))
    assert "over the 5 MB limit for return_base64" in answer["detail"]
    assert quota["credits_used"] == quota["credits_reserved"] == 0
    assert stored["result_url"] is not None


async def test_an_image_url_is_fetched(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, image_server: ImageServer
) -> None:
    image_server.pages["/disc.jpg"] = Page(body=encoded(scene()[0], "JPEG"), content_type="x/y")
    image_server.pages["/moved"] = Page(302, headers={"Location": "/disc.jpg"})
    settings = {"allow_private_urls": True}
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=settings) as setup:
        direct = await setup.process(image_url=image_server.url("/disc.jpg"))
        redirected = await setup.process(image_url=image_server.url("/moved"))
    assert (direct["width"], direct["height"]) == (320, 240)
    assert redirected["width"] == 320
    assert image_server.requests == ["/disc.jpg", "/moved", "/disc.jpg"]


async def test_private_addresses_are_refused_unless_allowed(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path, image_server: ImageServer
) -> None:
    image_server.pages["/disc.png"] = Page(body=picture())
    image_server.pages["/to-metadata"] = Page(
        302, headers={"Location": "http://169.254.169.254/latest/meta-data"}
    )
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        loopback = await setup.process(expect=422, image_url=image_server.url("/disc.png"))
        private = await setup.process(expect=422, image_url="http://10.1.2.3/a.png")
        quota = await setup.get("/quota")
    settings = {"allow_private_urls": True}
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=settings) as setup:
        metadata = await setup.process(expect=422, image_url=image_server.url("/to-metadata"))
    assert "a loopback address" in loopback["detail"]
    assert "a private address" in private["detail"]
    assert "a cloud metadata address" in metadata["detail"]
    assert image_server.requests == ["/to-metadata"]
    assert quota["credits_used"] == quota["credits_reserved"] == 0


@pytest.mark.parametrize(
    ("page", "message"),
    [
        (Page(404, b"gone", "text/plain"), "answered HTTP 404"),
        (Page(body=b"<html>hello</html>", content_type="image/png"), "not a JPEG, PNG or WebP"),
        (Page(body=b"x" * 5000), "larger than the limit of 4096 bytes"),
        (Page(body=picture(), delay=1.5), "took longer than 0.5 s"),
    ],
)
async def test_unfetchable_urls_are_422(
    gateway_factory: GatewayFactory,
    removebg_tiny_model: Path,
    image_server: ImageServer,
    page: Page,
    message: str,
) -> None:
    image_server.pages["/image"] = page
    settings = {"allow_private_urls": True, "max_download_bytes": 4096, "fetch_timeout": 0.5}
    async with removebg_setup(gateway_factory, removebg_tiny_model, settings=settings) as setup:
        answer = await setup.process(expect=422, image_url=image_server.url("/image"))
        unresolvable = await setup.process(expect=422, image_url="http://nowhere.invalid/a.png")
    assert message in answer["detail"]
    assert "does not resolve" in unresolvable["detail"]


async def test_keys_need_the_process_scope(
    gateway_factory: GatewayFactory, removebg_tiny_model: Path
) -> None:
    async with removebg_setup(gateway_factory, removebg_tiny_model) as setup:
        account = setup.owner.account_id
        reader = await setup.gateway.accounts.create_key(account, scopes=["removebg:quota:read"])
        refused = await setup.client.post(
            API + "/process",
            json={"image_base64": b64(picture())},
            headers={"Authorization": f"Bearer {reader.key}"},
        )
        anonymous = await setup.client.post(API + "/process", json={"image_base64": "QUJD"})
    assert refused.status_code == 403
    assert "removebg:images:process" in refused.json()["detail"]
    assert anonymous.status_code == 401
