"""Servers a test owns and may stop, start or break: Redis, a PostgreSQL cluster, an
HTTPS webhook receiver and a tenant's web site, never the shared ones."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tollway.testing.backends import unavailable
from tollway.testing.processes import free_port

if TYPE_CHECKING:
    from tollway.webhooks.testing import WebhookTestReceiver


class RedisServer:
    """A throwaway ``redis-server`` a test may stop and start (never the shared one),
    for outage and recovery tests."""

    def __init__(self, port: int, binary: str = "redis-server") -> None:
        self.binary = binary
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(
            [
                *(self.binary, "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 5
        try:
            while True:
                try:
                    client.ping()
                    return
                except redis.exceptions.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=5)
            self.process = None

    def info(self, section: str) -> dict[str, Any]:
        import redis

        client = redis.Redis(port=self.port)
        try:
            info: dict[str, Any] = client.info(section)
            return info
        finally:
            client.close()


class PostgresServer:
    """A throwaway PostgreSQL cluster (``initdb`` in a temporary directory, trust auth,
    127.0.0.1 on a free port) a test may stop and start: never the shared server.
    Run as the ``postgres`` system user when the test runs as root, as initdb
    requires."""

    def __init__(self, directory: Path, port: int, bin_dir: Path) -> None:
        self.directory = directory
        self.port = port
        self.bin_dir = bin_dir
        self.url = f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres"

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(
            [*prefix, *command], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def init(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        data = str(self.directory / "data")
        self._run(
            str(self.bin_dir / "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"
        )

    def start(self) -> None:
        data = self.directory / "data"
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory} -F"
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """``fast`` drops connections like a restart does; ``immediate`` like a crash."""
        data = self.directory / "data"
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(data), "-m", mode, "-w", "stop")


class WebSite:
    """A tenant's own web site, where a page of the gateway sends a browser on: a real
    HTTP server on 127.0.0.1 answering each path of ``pages`` (the query aside) with a
    page titled (``<title>``, ``<h1>``) with its value, 404 elsewhere. Use it as a
    context manager."""

    def __init__(self, pages: Mapping[str, str]) -> None:
        class Pages(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                title = pages.get(self.path.split("?")[0])
                body = f"<!doctype html><title>{title}</title><h1>{title}</h1>".encode()
                self.send_response(200 if title else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def __enter__(self) -> WebSite:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._http.shutdown()
        self._http.server_close()


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A private, running PostgreSQL cluster on a free port, removed afterwards."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    initdb = shutil.which("initdb")
    bin_dir = Path(initdb).parent if initdb else (found[-1].parent if found else None)
    if bin_dir is None:
        unavailable("PostgreSQL's initdb is not installed")
    assert bin_dir is not None
    # Not under pytest's temporary directory: the postgres user cannot enter it.
    directory = Path(tempfile.mkdtemp(prefix="tollway-postgres-"))
    server = PostgresServer(directory, free_port(), bin_dir)
    try:
        server.init()
        server.start()
        yield server
        with contextlib.suppress(subprocess.CalledProcessError):
            server.stop("immediate")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A private, running ``redis-server`` on a free port, stopped afterwards."""
    binary = shutil.which("redis-server")
    if binary is None:
        unavailable("redis-server is not on PATH")
    assert binary is not None
    server = RedisServer(free_port(), binary)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def webhook_certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (trust it with the
    ``webhooks_ca_file`` setting)."""
    from tollway.webhooks.testing import make_certificate

    if shutil.which("openssl") is None:
        unavailable("openssl is needed to make the receiver's certificate")
    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
async def webhook_receiver(
    webhook_certificate: tuple[Path, Path],
) -> AsyncIterator[WebhookTestReceiver]:
    """A running HTTPS receiver on loopback; ``trust(secret)`` before deliveries."""
    from tollway.webhooks.testing import WebhookTestReceiver

    server = WebhookTestReceiver(*webhook_certificate)
    await server.start()
    yield server
    await server.stop()
