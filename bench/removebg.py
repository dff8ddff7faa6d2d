"""Background removal: the API's cost on top of the model, and batch throughput.

Measured in one process, on the same image and the same rembg session:

* ``direct``  - ``rembg.remove(png_bytes, session=session)``: decode the PNG, run
  U²-Net-p, cut out, encode a PNG. The baseline: what any service must do.
* ``api``     - ``POST /v1/removebg/process`` with the same image as ``image_base64``,
  through the whole gateway in-process (httpx ``ASGITransport``): key, plan, scope and
  rate limit checks, credit reservation and charge, base64, the model on its worker
  thread, PNG encoding, storing the result in SQLite and signing its URL.

The two alternate, one call each per round, after a warm-up; medians are compared:
``overhead = api / direct - 1`` (target <= 10%). Then one batch of ``--batch`` URLs
(served from a loopback HTTP server) is timed from submission to ``completed``:
images per second, against ``1 / direct`` (one image at a time on the same model).

Needs the weights: ``tollway removebg models fetch``. Run ``python bench/removebg.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from common import Run, add_output, argument_parser, log, publish, quantile
from PIL import Image, ImageDraw

from tollway import Gateway, load_settings
from tollway.testing import open_product_client
from tollway_removebg.segmenter import RembgSegmenter, numba_cache_dir
from tollway_removebg.service import RemoveBg
from tollway_removebg.settings import RemoveBgSettings

TARGET_OVERHEAD = 0.10
UNLIMITED = 10**9


def make_image(width: int, height: int) -> bytes:
    """A red disc on grey noise, as PNG (the tests' synthetic product photo)."""
    rng = np.random.default_rng(7)
    image = Image.fromarray(rng.integers(90, 170, (height, width, 3), dtype=np.uint8))
    radius = min(width, height) * 5 // 16
    centre = (width // 2, height // 2)
    box = (centre[0] - radius, centre[1] - radius, centre[0] + radius, centre[1] + radius)
    ImageDraw.Draw(image).ellipse(box, fill=(220, 20, 30))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


class ImageServer:
    """Serves ``body`` at every path, on a free loopback port, in a thread."""

    def __init__(self, body: bytes) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.port = self.http.server_address[1]
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def _settings(workdir: Path) -> Any:
    limits = {"requests_per_day": UNLIMITED, "limits": {"credits_per_month": UNLIMITED}}
    return load_settings(
        environ={},
        database_url=f"sqlite+aiosqlite:///{workdir / 'bench.db'}",
        plugins=["removebg"],
        demo=False,
        products={
            "removebg": {
                "settings": {"allow_private_urls": True},
                "plans": {"business": limits},
            }
        },
    )


async def measure(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    import rembg  # type: ignore[import-untyped]

    weights = RemoveBgSettings().model_file()
    if not weights.is_file():
        raise SystemExit(f"{weights} is missing: run `tollway removebg models fetch` first")
    gateway = Gateway(_settings(workdir))
    await gateway.migrate()
    segmenter = gateway.service(RemoveBg).model.segmenter
    assert isinstance(segmenter, RembgSegmenter)
    session = segmenter.session()
    png = make_image(args.width, args.height)
    body = {"image_base64": base64.b64encode(png).decode()}

    def direct() -> float:
        started = time.perf_counter()
        out = rembg.remove(png, session=session)
        elapsed = time.perf_counter() - started
        assert isinstance(out, bytes)
        assert out[:8] == b"\x89PNG\r\n\x1a\n"
        return elapsed

    async def api(client: httpx.AsyncClient) -> float:
        started = time.perf_counter()
        response = await client.post("/v1/removebg/process", json=body)
        elapsed = time.perf_counter() - started
        assert response.status_code == 200, response.text
        return elapsed

    server = ImageServer(png)
    try:
        async with open_product_client(gateway, "removebg", plan="business") as removebg:
            client = removebg.client
            log(f"warming up ({args.warmup} rounds)")
            for _ in range(args.warmup):
                direct()
                await api(client)
            direct_times: list[float] = []
            api_times: list[float] = []
            log(f"measuring {args.rounds} rounds of one direct call and one API call")
            for round_number in range(args.rounds):
                if round_number % 2:
                    api_times.append(await api(client))
                    direct_times.append(direct())
                else:
                    direct_times.append(direct())
                    api_times.append(await api(client))
            log(f"batch of {args.batch} URLs")
            url = f"http://127.0.0.1:{server.port}/image-{{}}.png"
            images = [{"url": url.format(n), "id": str(n)} for n in range(args.batch)]
            started = time.perf_counter()
            submitted = await client.post("/v1/removebg/batch", json={"images": images})
            assert submitted.status_code == 202, submitted.text
            job_id = submitted.json()["job_id"]
            while True:
                job = (await client.get(f"/v1/removebg/batch/{job_id}")).json()
                if job["status"] != "processing":
                    break
                await asyncio.sleep(0.05)
            batch_seconds = time.perf_counter() - started
            if job["status"] != "completed" or job["completed"] != args.batch:
                raise SystemExit(f"the batch did not complete: {job}")
    finally:
        server.stop()
        await gateway.database.dispose()
    return {
        "direct": direct_times,
        "api": api_times,
        "batch_seconds": batch_seconds,
    }


def report(args: argparse.Namespace, result: dict[str, Any], run: Run) -> str:
    direct = statistics.median(result["direct"])
    api = statistics.median(result["api"])
    overhead = api / direct - 1
    batch_rate = args.batch / result["batch_seconds"]
    verdict = "PASS" if overhead <= TARGET_OVERHEAD else "MISS"
    lines = [
        "# Background removal benchmark",
        "",
        run.headline("bench/removebg.py") + f"; whole run {run.elapsed:.0f} s.",
        "",
        run.machine(),
        f"- Python {platform.python_version()}",
        f"- model: u2netp; image {args.width}x{args.height} PNG (red disc on grey noise)",
        f"- rounds: {args.rounds} (after {args.warmup} warm-up rounds); batch: {args.batch} URLs",
        "",
        "| Measurement | Median | p90 | Min |",
        "|---|---|---|---|",
    ]
    for name in ("direct", "api"):
        times = result[name]
        lines.append(
            f"| {name} | {statistics.median(times) * 1000:.0f} ms "
            f"| {quantile(times, 90) * 1000:.0f} ms | {min(times) * 1000:.0f} ms |"
        )
    lines += [
        "",
        f"- API overhead over rembg.remove: {overhead * 100:+.1f}% "
        f"(target <= {TARGET_OVERHEAD * 100:.0f}%: {verdict})",
        f"- batch of {args.batch}: {result['batch_seconds']:.1f} s, {batch_rate:.2f} images/s "
        f"(one image at a time directly: {1 / direct:.2f} images/s)",
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("removebg.py", __doc__)
    parser.add_argument("--rounds", type=int, default=30, help="measured rounds (30)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up rounds (3)")
    parser.add_argument("--batch", type=int, default=100, help="images in the batch (100)")
    parser.add_argument("--width", type=int, default=640, help="image width (640)")
    parser.add_argument("--height", type=int, default=480, help="image height (480)")
    add_output(parser, "removebg")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run.begin()
    os.environ.setdefault("NUMBA_CACHE_DIR", str(numba_cache_dir()))
    with tempfile.TemporaryDirectory(prefix="tollway-bench-removebg-") as workdir:
        result = asyncio.run(measure(args, Path(workdir)))
    publish(report(args, result, run), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
