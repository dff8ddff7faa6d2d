"""``tollway serve`` and ``tollway worker`` in processes of their own, for tests (and
benchmarks) whose behaviour crosses processes."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from tollway.gateway import Gateway


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def deployment_settings(gateway: Gateway) -> dict[str, Any]:
    """Settings under which a :class:`GatewayProcess` or :class:`WorkerProcess` joins
    ``gateway``'s deployment: the same database, Redis, rate limit namespace, job queue
    and real-time bus channels."""
    settings = gateway.settings
    joined: dict[str, Any] = {
        "database_url": settings.database_url,
        "rate_limit_prefix": settings.rate_limit_prefix,
        "job_queue_name": settings.job_queue_name,
        "live_channel_prefix": settings.live_channel_prefix,
    }
    if settings.redis_url:
        joined["redis_url"] = settings.redis_url
    return joined


class GatewayProcess:
    """``tollway serve`` in a process of its own, on a free port of 127.0.0.1, for tests
    whose behaviour crosses processes. ``settings`` become ``TOLLWAY_*`` variables (the
    test's own ``TOLLWAY_*`` environment is left out), ``config`` is a TOML file and
    ``arguments`` go to the command (``["--workers", "2"]``). Use it as a context
    manager, or :meth:`start` and :meth:`stop` (SIGTERM, then SIGKILL) or :meth:`kill`
    (SIGKILL)."""

    command = "serve"

    def __init__(
        self,
        *,
        plugins: Iterable[str] | None = None,
        cwd: Path | None = None,
        config: Path | None = None,
        ready_path: str = "/healthz",
        arguments: Iterable[str] = (),
        **settings: Any,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ready_path = ready_path
        env = {key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")}
        env["TOLLWAY_DEMO"] = "false"
        if config is not None:
            env["TOLLWAY_CONFIG"] = str(config)
        for name, value in settings.items():
            env[f"TOLLWAY_{name.upper()}"] = str(value)
        self._env = env
        self._arguments = [*self._command_arguments(), *arguments]
        if plugins is not None:
            self._arguments += ["--plugins", ",".join(plugins)]
        self._cwd = cwd
        self.process: subprocess.Popen[bytes] | None = None
        # Open for the object's life: tests read the log after the process ended.
        self._log = tempfile.TemporaryFile()  # noqa: SIM115

    def _command_arguments(self) -> list[str]:
        return ["serve", "--host", "127.0.0.1", "--port", str(self.port)]

    @property
    def log(self) -> str:
        """What the process wrote to stderr so far."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def start(self, timeout: float = 60.0) -> GatewayProcess:
        binary = shutil.which("tollway")
        if binary is None:
            raise RuntimeError("the tollway command is not installed")
        self.process = subprocess.Popen(
            [binary, *self._arguments],
            env=self._env,
            cwd=self._cwd,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"tollway {self.command} exited with {self.process.returncode}:\n{self.log}"
                )
            if self._ready():
                return self
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"tollway {self.command} not ready within {timeout} s")
            time.sleep(0.1)

    def _ready(self) -> bool:
        try:
            httpx.get(f"{self.url}{self.ready_path}", timeout=2)
        except httpx.TransportError:
            return False
        return True

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``; then whatever the process started
        (a server's workers, one still starting when told to stop) is killed with it."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._kill_group()

    def kill(self) -> None:
        """SIGKILL, as a crash would: the process and everything it started."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._kill_group()

    def _kill_group(self) -> None:
        assert self.process is not None
        # start_new_session made the process the leader of a group of its own.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def __enter__(self) -> GatewayProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class WorkerProcess(GatewayProcess):
    """``tollway worker`` in a process of its own (same settings as
    :class:`GatewayProcess`); ready once it says so on stderr."""

    command = "worker"

    def _command_arguments(self) -> list[str]:
        return ["worker"]

    def _ready(self) -> bool:
        return "worker ready" in self.log
