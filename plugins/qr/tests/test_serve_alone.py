"""The public QR API served on its own (``tollway serve --plugins qr``), over real HTTP,
on both servers."""

from __future__ import annotations

import http.client
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import zxingcpp
from PIL import Image

from tollway.testing import free_port
from tollway_qr.admission import MAX_QUERY_BYTES

SERVER_URI_LIMIT = 65_534
"""Longest request target both servers pass to the app: hyper (under granian) answers
a longer one 414 itself, httptools (under uvicorn) 400; neither limit is configurable."""


@contextmanager
def _serving(tmp_path: Path, server: str) -> Iterator[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")}
    env["TOLLWAY_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'qr.db'}"
    port = free_port()
    command = [sys.executable, "-m", "tollway.cli", "serve", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--plugins", "qr", "--server", server],
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
                httpx.get(f"{base}/healthz", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.1)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)


def test_serve_with_only_the_qr_plugin(tmp_path: Path) -> None:
    with _serving(tmp_path, "granian") as base:
        response = httpx.get(f"{base}/api/qr", params={"data": "served alone"}, timeout=2)
        gateway_route = httpx.post(f"{base}/v1/code/qr", json={"data": "x"}, timeout=2)
    assert response.status_code == 200
    assert response.headers["x-ratelimit-limit"] == "30"
    with Image.open(io.BytesIO(response.content)) as image:
        [result] = zxingcpp.read_barcodes(image.convert("RGB"))
    assert result.text == "served alone"
    assert gateway_route.status_code == 404  # only the selected plugin is served


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_head_and_long_queries_over_real_http(tmp_path: Path, server: str) -> None:
    with _serving(tmp_path, server) as base, httpx.Client(base_url=base, timeout=5) as client:
        get = client.get("/api/qr", params={"data": "over the wire"})
        head = client.head("/api/qr", params={"data": "over the wire"})
        too_long = client.get("/api/qr", params={"data": "x" * MAX_QUERY_BYTES})
        # httpx itself refuses URLs this long.
        connection = http.client.HTTPConnection(urlsplit(base).netloc, timeout=5)
        connection.request("GET", "/api/qr?data=" + "x" * SERVER_URI_LIMIT)
        beyond_the_server = connection.getresponse()
        connection.close()
    assert head.status_code == 200
    assert head.content == b""
    assert int(head.headers["content-length"]) == len(get.content)
    assert head.headers["etag"] == get.headers["etag"]
    assert too_long.status_code == 414
    assert set(too_long.json()) == {"error"}
    assert too_long.headers["x-ratelimit-remaining"] == "28"  # reported, not counted
    # What the server refuses itself never reaches the app: no body or headers of ours.
    assert beyond_the_server.status == (414 if server == "granian" else 400)
    assert beyond_the_server.getheader("x-request-id") is None
