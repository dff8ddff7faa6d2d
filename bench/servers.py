"""Starting a server (granian; uvicorn for comparison) on a benchmark app in its own
process group, and always stopping it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Literal

from common import BENCH_DIR

from tollway.testing import free_port

HOST = "127.0.0.1"


class ServerError(RuntimeError):
    """The server did not come up, or answered the readiness probe wrongly."""


ServerKind = Literal["granian", "uvicorn"]


def server_command(kind: ServerKind, target: str, port: int, workers: int = 1) -> list[str]:
    """The server from this interpreter's environment on factory ``target``: ``workers``
    ASGI worker processes, no access log (uvicorn as ``tollway serve --server uvicorn``
    runs it)."""
    script = Path(sys.executable).parent / kind
    launcher = [str(script)] if script.exists() else [sys.executable, "-m", kind]
    common = ["--host", HOST, "--port", str(port), "--workers", str(workers), "--factory", target]
    if kind == "granian":
        return [
            *launcher,
            *common,
            "--interface",
            "asgi",
            "--no-access-log",
            "--log-level",
            "warning",
        ]
    return [
        *launcher,
        *common,
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--no-access-log",
        "--log-level",
        "warning",
    ]


def clean_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment minus any TOLLWAY_* / GRANIAN_* setting, plus
    ``extra``, with bench/ importable so ``apps:...`` resolves."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("TOLLWAY_", "GRANIAN_"))
    }
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BENCH_DIR) + (os.pathsep + path if path else "")
    env.update(extra)
    return env


class Server:
    """``granian|uvicorn ... --factory <target>`` on a free port; a context manager.

    The server runs in a new session, so stopping it signals its whole process group
    (granian's supervisor and its workers) and nothing else.
    """

    def __init__(
        self,
        name: str,
        target: str,
        env: Mapping[str, str],
        log_dir: Path,
        kind: ServerKind = "granian",
        workers: int = 1,
    ) -> None:
        self.name = name
        self.target = target
        self.kind: ServerKind = kind
        self.workers = workers
        self.env = clean_environment(env)
        self.log_path = log_dir / f"{name}.log"
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"

    @property
    def pid(self) -> int | None:
        """The server's main process (granian's supervisor), while it runs."""
        return self._process.pid if self._process is not None else None

    def start(self, probe_path: str, headers: Mapping[str, str], timeout: float = 60.0) -> None:
        """Start the server and wait until ``probe_path`` answers 200."""
        self.port = free_port()
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                server_command(self.kind, self.target, self.port, self.workers),
                env=self.env,
                cwd=BENCH_DIR,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                raise ServerError(
                    f"{self.name} exited with {self._process.returncode}{self._log()}"
                )
            try:
                self.probe(probe_path, headers)
                return
            except (ConnectionError, urllib.error.URLError, TimeoutError) as error:
                if time.monotonic() > deadline:
                    raise ServerError(f"{self.name} not ready after {timeout}s: {error}") from error
                time.sleep(0.1)

    def probe(self, path: str, headers: Mapping[str, str]) -> dict[str, str]:
        """GET ``path``; the response headers (lower-case names) if it answers 200."""
        request = urllib.request.Request(self.url(path), headers=dict(headers))
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                response.read()
                return {name.lower(): value for name, value in response.headers.items()}
        except urllib.error.HTTPError as error:
            body = error.read().decode(errors="replace")
            raise ServerError(f"{self.name}: {path} answered {error.code}: {body}") from error

    def stop(self) -> None:
        """SIGTERM the process group, SIGKILL it if it lingers; safe to call twice."""
        process, self._process = self._process, None
        if process is None:
            return
        for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            try:
                process.wait(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue
        # The group may outlive its leader (an orphaned worker): make sure it is gone.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    def _log(self) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip()
        except OSError:
            return ""
        return f"; its log ({self.log_path}):\n{text[-4000:]}" if text else ""

    def __enter__(self) -> Server:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


@contextlib.contextmanager
def running(servers: list[Server]) -> Iterator[list[Server]]:
    """Stop every server on the way out, whatever happens in between."""
    try:
        yield servers
    finally:
        for server in servers:
            server.stop()
