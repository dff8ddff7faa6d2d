"""Driving wrk and reading its report; the event loop of in-process load."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
_RPS = re.compile(r"^Requests/sec:\s+([\d.]+)", re.MULTILINE)
_PERCENTILE = r"^\s+{}%\s+([\d.]+)(us|ms|s|m|h)\s*$"
_REQUESTS = re.compile(r"^\s+(\d+) requests in", re.MULTILINE)
_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s+(\d+)")
_SOCKET_ERRORS = re.compile(r"Socket errors: (.*)")


class LoadError(RuntimeError):
    """wrk failed, or the run it reports is not a valid measurement."""


@dataclass(frozen=True, slots=True)
class Measurement:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int


def wrk_path() -> str:
    path = shutil.which("wrk")
    if path is None:
        raise LoadError("wrk is not installed (Debian/Ubuntu: apt-get install -y wrk)")
    return path


def run_wrk(
    url: str,
    *,
    duration: float,
    connections: int,
    headers: dict[str, str],
    threads: int = 1,
    timeout: float | None = None,
) -> Measurement:
    """One wrk run against ``url``; every response must be a 2xx. ``timeout`` is wrk's
    per-request timeout in seconds (``None``: wrk's own 2 s)."""
    command = [
        wrk_path(),
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(duration))}s",
        *([f"--timeout={max(1, round(timeout))}s"] if timeout is not None else []),
        "--latency",
        *(item for name, value in headers.items() for item in ("-H", f"{name}: {value}")),
        url,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=duration + (timeout or 2) + 60, check=False
    )
    if done.returncode != 0:
        raise LoadError(f"wrk exited with {done.returncode}: {done.stderr.strip()}")
    return parse(done.stdout)


def parse(report: str) -> Measurement:
    """Requests/sec and the 50 % / 99 % latencies (in ms) of a ``wrk --latency`` report."""
    if match := _NON_2XX.search(report):
        raise LoadError(f"{match.group(1)} responses were not 2xx:\n{report}")
    if match := _SOCKET_ERRORS.search(report):
        raise LoadError(f"socket errors ({match.group(1)}):\n{report}")
    rps = _RPS.search(report)
    requests = _REQUESTS.search(report)
    if rps is None or requests is None:
        raise LoadError(f"cannot read wrk's report:\n{report}")
    return Measurement(
        rps=float(rps.group(1)),
        p50_ms=_percentile(report, 50),
        p99_ms=_percentile(report, 99),
        requests=int(requests.group(1)),
    )


def _percentile(report: str, percent: int) -> float:
    match = re.search(_PERCENTILE.format(percent), report, re.MULTILINE)
    if match is None:
        raise LoadError(f"no {percent}% latency in wrk's report (run with --latency):\n{report}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def run_wrk_script(
    url: str,
    script: str,
    *,
    duration: float,
    connections: int,
    script_args: Sequence[str] = (),
    timeout: float = 10.0,
    threads: int = 1,
) -> Measurement:
    """One wrk run driven by the Lua ``script`` (``-s``), whose ``init(args)`` gets
    ``script_args``; every response must be a 2xx. ``timeout`` is wrk's per-request
    timeout in seconds (wrk's own default of 2 s counts slow responses as errors)."""
    command = [
        wrk_path(),
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(duration))}s",
        f"--timeout={max(1, round(timeout))}s",
        "--latency",
        "-s",
        script,
        url,
        "--",
        *script_args,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=duration + timeout + 60, check=False
    )
    if done.returncode != 0:
        raise LoadError(f"wrk exited with {done.returncode}: {done.stderr.strip()}")
    return parse(done.stdout)


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop, as the servers run (granian's ``--loop auto``), when
    installed; for ``asyncio.Runner(loop_factory=...)``."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop
