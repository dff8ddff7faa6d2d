"""A local HTTP server handing out images (and failures) for ``image_url`` tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Page:
    status: int = 200
    body: bytes = b""
    content_type: str = "image/png"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


class ImageServer:
    """``pages[path]`` is served at ``url(path)``; anything else is 404."""

    def __init__(self) -> None:
        self.pages: dict[str, Page] = {}
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                page = server.pages.get(self.path, Page(404, b"not found", "text/plain"))
                time.sleep(page.delay)
                self.send_response(page.status)
                self.send_header("Content-Type", page.content_type)
                self.send_header("Content-Length", str(len(page.body)))
                for name, value in page.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(page.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.port = self._http.server_address[1]
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()


@pytest.fixture
def image_server() -> Iterator[ImageServer]:
    server = ImageServer()
    server.start()
    yield server
    server.stop()
