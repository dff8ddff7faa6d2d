"""The public QR API served on its own (``tollway serve --plugins qr``), over real HTTP."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import zxingcpp
from PIL import Image

from tollway.testing import free_port


def test_serve_with_only_the_qr_plugin(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")}
    env["TOLLWAY_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'qr.db'}"
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tollway.cli", "serve", "--port", str(port), "--plugins", "qr"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.get(f"{base}/api/qr", params={"data": "served alone"}, timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.1)
        gateway_route = httpx.post(f"{base}/v1/code/qr", json={"data": "x"}, timeout=2)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=15)
    assert response.status_code == 200
    assert response.headers["x-ratelimit-limit"] == "30"
    with Image.open(io.BytesIO(response.content)) as image:
        [result] = zxingcpp.read_barcodes(image.convert("RGB"))
    assert result.text == "served alone"
    assert gateway_route.status_code == 404  # only the selected plugin is served
