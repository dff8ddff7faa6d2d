"""Public QR API: PNG throughput over HTTP against raw segno rendering, in one run.

Four measurements, taken in turns (the order rotates every round), medians reported:

* ``raw-segno``     - in this process, one thread: ``segno.make_qr(data, error="M")`` and
  ``.save(BytesIO, kind="png", scale=s, border=2)``, ``s`` the scale giving about ``--size``
  pixels; every render a new ``data`` string of the same length. The baseline.
* ``tollway-render`` - in this process: ``tollway_render.render_qr`` of the same
  request as the HTTP path (the renderer the API uses), for context.
* ``http-miss``     - ``GET /api/qr?size=..&data=..`` on granian (ASGI, 1 worker), every
  request a new ``data`` value (a wrk Lua script counts), so every request renders.
* ``http-hit``      - one fixed URL, warmed once: every request is served from the
  in-process render cache.

The ratios ``http-miss / raw-segno`` (target >= 0.7) and ``http-hit / raw-segno``
(target >= 5) compare the medians of the same run. Targets print as PASS/MISS; the exit
status is 0 either way. Run with ``python bench/qr.py`` (``--help`` for the options).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Final
from urllib.parse import quote
from urllib.request import urlopen

import segno
from common import (
    BenchError,
    Measured,
    Run,
    add_output,
    argument_parser,
    at_least_one,
    log,
    per_round_table,
    publish,
    quantile,
    rotating,
)
from loadgen import LoadError, Measurement, run_wrk, run_wrk_script, wrk_path
from servers import Server, ServerError, running, server_command

from tollway import Gateway, load_settings
from tollway_render import QrRequest, render_qr

WARMUP_SECONDS = 3
TARGET = "apps:qr_app"
ROUTE = "/api/qr"
ECC: Final = "M"
MARGIN = 2
"""The API's default quiet zone (modules), and the raw segno ``border``."""
LIMIT = 10**9
"""The anonymous tier's per-minute limits in the run's config: nothing is refused."""
MISS_TARGET = 0.7
HIT_TARGET = 5.0

DATA_PREFIX = "https://example.com/qr/"
DATA_LENGTH = len(DATA_PREFIX) + 12
"""Every ``data`` value is the prefix, a 2-digit tag (the measurement), a 1-digit thread
(wrk's; 0 in this process) and a 9-digit counter: 35 ASCII characters, byte mode."""

MISS_SCRIPT = """\
-- bench/qr.py: every request a new data value, never repeated within the server's life.
-- args: url-encoded data prefix, 2-digit tag, image size.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("thread_id", threads)
end

local base
local counter = 0
function init(args)
  base = "/api/qr?size=" .. args[3] .. "&format=png&data=" .. args[1] .. args[2]
    .. string.format("%d", thread_id % 10)
end

function request()
  counter = counter + 1
  return wrk.format("GET", base .. string.format("%09d", counter))
end
"""


def data_value(tag: int, thread: int, counter: int) -> str:
    return f"{DATA_PREFIX}{tag:02d}{thread}{counter:09d}"


HIT_DATA = data_value(0, 0, 0)
"""wrk's threads count from 1, so no miss request ever sends this value."""


@dataclass
class Case(Measured):
    measure: Callable[[int, float], Measurement]
    """``measure(tag, seconds)``; ``tag`` keeps each run's data values apart."""
    http: bool


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("qr.py", __doc__)
    parser.add_argument(
        "--duration", type=int, default=10, help="seconds per HTTP measurement (10)"
    )
    parser.add_argument("--connections", type=int, default=64, help="wrk connections (64)")
    parser.add_argument("--rounds", type=int, default=3, help="measurements per case (3)")
    parser.add_argument("--size", type=int, default=200, help="image size in pixels (200)")
    parser.add_argument(
        "--raw-seconds",
        type=float,
        default=5.0,
        help="seconds per in-process measurement (5)",
    )
    add_output(parser, "qr")
    args = parser.parse_args(argv)
    at_least_one(parser, args, "duration", "connections", "rounds")
    if args.rounds > 98:
        parser.error("--rounds must be at most 98 (each run has its own 2-digit data tag)")
    if not 50 <= args.size <= 1000:
        parser.error("--size must be between 50 and 1000, as the API accepts")
    if args.raw_seconds <= 0:
        parser.error("--raw-seconds must be positive")
    return args


# --- in process --------------------------------------------------------------------


def segno_scale(size: int) -> tuple[int, int]:
    """segno's ``scale`` for a ``size`` px image of this run's data, and the pixels it
    gives: the API's own rule (the largest whole scale that fits), without its centring."""
    total = len(segno.make_qr(HIT_DATA, error=ECC).matrix) + 2 * MARGIN
    scale = max(1, size // total)
    return scale, scale * total


def raw_segno(scale: int) -> Callable[[str], bytes]:
    def render(data: str) -> bytes:
        buffer = io.BytesIO()
        segno.make_qr(data, error=ECC).save(buffer, kind="png", scale=scale, border=MARGIN)
        return buffer.getvalue()

    return render


def tollway_render(size: int) -> Callable[[str], bytes]:
    def render(data: str) -> bytes:
        return render_qr(QrRequest(data, "png", size, ECC, MARGIN, "000000", "ffffff")).content

    return render


def in_process(render: Callable[[str], bytes]) -> Callable[[int, float], Measurement]:
    """Renders per second over ``seconds``, every render new data; p50/p99 are single
    renders (service time, no queueing)."""

    def measure(tag: int, seconds: float) -> Measurement:
        clock = time.perf_counter
        durations: list[float] = []
        counter = 0
        start = now = clock()
        deadline = start + seconds
        while now < deadline:
            counter += 1
            data = data_value(tag, 0, counter)
            before = clock()
            render(data)
            now = clock()
            durations.append(now - before)
        return Measurement(
            rps=counter / (now - start),
            p50_ms=quantile(durations, 50) * 1e3,
            p99_ms=quantile(durations, 99) * 1e3,
            requests=counter,
        )

    return measure


def check_same_image(size: int, scale: int) -> None:
    """The raw baseline encodes the same symbol as the API (same version, level, mask,
    modules), and every data value of the run has the same length."""
    ours = segno.make_qr(HIT_DATA, error=ECC, boost_error=False)
    raw = segno.make_qr(HIT_DATA, error=ECC)
    if (raw.version, raw.error, raw.matrix) != (ours.version, ours.error, ours.matrix):
        raise BenchError("raw segno and the API would not encode the same symbol")
    if len(data_value(98, 9, 999_999_999)) != DATA_LENGTH:
        raise BenchError("data values must all have the same length")
    if scale * (len(raw.matrix) + 2 * MARGIN) > size:
        raise BenchError(f"--size {size} is too small for the data: no whole scale fits")


# --- HTTP --------------------------------------------------------------------------


async def prepare_database(database_url: str) -> None:
    settings = load_settings(environ={}, database_url=database_url, plugins=["qr"], demo=False)
    gateway = Gateway(settings)
    try:
        await gateway.migrate()
    finally:
        await gateway.database.dispose()


def write_config(workdir: Path) -> Path:
    path = workdir / "qr.toml"
    path.write_text(
        "[products.qr.plans.anonymous.limits]\n"
        f"image_per_minute = {LIMIT}\n"
        f"json_per_minute = {LIMIT}\n"
    )
    return path


def image_path(data: str, size: int) -> str:
    return f"{ROUTE}?size={size}&format=png&data={quote(data, safe='')}"


def start_server(
    workdir: Path, database_url: str, size: int, extra_env: Mapping[str, str] | None = None
) -> Server:
    """The QR server on ``database_url`` (migrated), with ``extra_env`` (e.g. the Redis
    limiter's settings); checks it serves the run's image."""
    env = {
        "TOLLWAY_DATABASE_URL": database_url,
        "TOLLWAY_PLUGINS": "qr",
        "TOLLWAY_DEMO": "false",
        "TOLLWAY_AUTO_MIGRATE": "false",
        "TOLLWAY_CONFIG": str(write_config(workdir)),
        **(extra_env or {}),
    }
    server = Server("qr", TARGET, env, workdir)
    hit = image_path(HIT_DATA, size)
    server.start(hit, {})  # the one request that renders the hit path's image
    answered = server.probe(hit, {})
    limit = answered.get("x-ratelimit-limit")
    if limit is not None and limit != str(LIMIT):
        raise ServerError(f"anonymous limit is {limit}, not {LIMIT}: was the config read?")
    if answered.get("content-type", "").split(";")[0] != "image/png":
        raise ServerError(f"{hit} answered {answered.get('content-type')}, not image/png")
    body = fetch(server.url(hit))
    if body != tollway_render(size)(HIT_DATA):
        raise ServerError("the API's image differs from render_qr of the same request")
    return server


def fetch(url: str) -> bytes:
    with urlopen(url, timeout=10) as response:
        body: bytes = response.read()
        return body


def http_miss(
    server: Server, script: Path, args: argparse.Namespace
) -> Callable[[int, float], Measurement]:
    prefix = quote(DATA_PREFIX, safe="")

    def measure(tag: int, seconds: float) -> Measurement:
        return run_wrk_script(
            server.url(ROUTE),
            str(script),
            duration=seconds,
            connections=args.connections,
            script_args=[prefix, f"{tag:02d}", str(args.size)],
        )

    return measure


def http_hit(server: Server, args: argparse.Namespace) -> Callable[[int, float], Measurement]:
    url = server.url(image_path(HIT_DATA, args.size))

    def measure(tag: int, seconds: float) -> Measurement:
        return run_wrk(url, duration=seconds, connections=args.connections, headers={})

    return measure


def drained(server: Server, size: int) -> None:
    """Wait until the server has finished the requests wrk left in flight.

    When wrk stops, up to ``--connections`` requests are still queued in the worker (on
    the miss path about 64 renders, some 0.3 s of work); they would otherwise land in the
    next measurement (a p99 of that size on the hit path, or CPU taken from an in-process
    measurement). The worker serves in arrival order, so a request sent now answers only
    after them; a second one checks that the server is idle again.
    """
    url = server.url(image_path(HIT_DATA, size))
    for _ in range(2):
        fetch(url)


# --- running -----------------------------------------------------------------------


def rounds(cases: list[Case], server: Server, args: argparse.Namespace) -> None:
    """Alternate the cases, rotating the order every round; tag 1 is the warm-up."""
    for index, case in rotating(cases, args.rounds):
        seconds = args.duration if case.http else args.raw_seconds
        result = case.measure(index + 2, seconds)
        if case.http:
            drained(server, args.size)
        case.runs.append(result)
        log(
            f"  round {index + 1}/{args.rounds} {case.name:<15} {result.rps:>9.1f} /s"
            f"  p50 {result.p50_ms:8.2f} ms  p99 {result.p99_ms:8.2f} ms"
        )


# --- reporting ---------------------------------------------------------------------


def _wrk_version() -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            [wrk_path(), "-v"], capture_output=True, text=True, timeout=10, check=False
        )
        words = (done.stdout + done.stderr).split()
        if len(words) > 1:
            return words[1]
    return "?"


def verdict(value: float, target: float) -> str:
    return f"**{'PASS' if value >= target else 'MISS'}** ({value:.2f})"


def report(
    cases: list[Case],
    args: argparse.Namespace,
    run: Run,
    *,
    raw_pixels: int,
    scale: int,
) -> str:
    raw, ours, miss, hit = cases
    base = raw.median("rps")
    miss_ratio = miss.median("rps") / base
    hit_ratio = hit.median("rps") / base
    command = server_command("granian", TARGET, 0)
    command[0] = Path(command[0]).name
    server = " ".join(command).replace("--port 0", "--port <free>")
    lines = [
        "# Public QR API",
        "",
        run.headline("bench/qr.py")
        + " (compare the ratios within the run, not absolute numbers across runs).",
        "",
        run.machine(),
        f"- Python {platform.python_version()}, granian {version('granian')} (ASGI, 1 worker), "
        f"litestar {version('litestar')}, segno {version('segno')}, Pillow {version('pillow')}, "
        f"wrk {_wrk_version()}",
        f"- {args.rounds} rounds in rotating order after a {WARMUP_SECONDS} s warm-up of each "
        f"case; HTTP {args.duration} s and in-process {args.raw_seconds:g} s per measurement; "
        f"medians below; whole run {run.elapsed:.0f} s",
        f"- data: `{DATA_PREFIX}` + 12 digits, {DATA_LENGTH} ASCII characters (byte mode, "
        f"QR version {segno.make_qr(HIT_DATA, error=ECC).version}, level {ECC}), a new value "
        "for every render except on the hit path",
        f"- server: `TOLLWAY_PLUGINS=qr TOLLWAY_CONFIG=<tmp>/qr.toml "
        f"TOLLWAY_DATABASE_URL=sqlite+aiosqlite:///<tmp>/bench.db {server}` (from bench/); "
        f"the config lifts the anonymous tier to {LIMIT:,} images/minute",
        f"- http-miss: `wrk -t1 -c{args.connections} -d{args.duration}s --timeout=10s "
        f"--latency -s qr-miss.lua http://127.0.0.1:<port>{ROUTE} -- <prefix> <tag> "
        f"{args.size}` (the script in bench/qr.py builds "
        f"`{ROUTE}?size={args.size}&format=png&data=<prefix><tag><thread><counter>`)",
        f"- http-hit: `wrk -t1 -c{args.connections} -d{args.duration}s --latency "
        f"'http://127.0.0.1:<port>{image_path(HIT_DATA, args.size)}'`",
        f'- raw-segno: `segno.make_qr(data, error="{ECC}").save(BytesIO(), kind="png", '
        f"scale={scale}, border={MARGIN})` ({raw_pixels}x{raw_pixels} px); tollway-render: "
        f"`render_qr(QrRequest(data, 'png', {args.size}, '{ECC}', {MARGIN}, ...))` "
        f"({args.size}x{args.size} px, the bytes the API serves)",
        "",
        "| case | per second | p50 (ms) | p99 (ms) | ratio to raw-segno |",
        "|---|---:|---:|---:|---:|",
    ]
    for case in cases:
        lines.append(
            f"| {case.name} | {case.median('rps'):,.1f} | {case.median('p50_ms'):.2f} "
            f"| {case.median('p99_ms'):.2f} | {case.median('rps') / base:.2f} |"
        )
    per_miss = 1e6 / miss.median("rps") - 1e6 / ours.median("rps")
    lines += [
        "",
        f"Targets (throughput over raw-segno): cache miss >= {MISS_TARGET:.1f}: "
        f"{verdict(miss_ratio, MISS_TARGET)}; cache hit >= {HIT_TARGET:.0f}: "
        f"{verdict(hit_ratio, HIT_TARGET)}",
        "",
        f"p50/p99 of the HTTP cases are wrk's latencies at {args.connections} connections "
        "(queueing included); of the in-process cases, single renders. "
        f"HTTP cost of a miss over the in-process render: {per_miss:,.0f} µs per request "
        f"(1e6/http-miss - 1e6/tollway-render; a difference of two ~5 ms costs, so it moves "
        f"by ±100 µs between runs); a hit costs {1e6 / hit.median('rps'):,.0f} µs of server "
        "time.",
        "",
        "Per round (per second; ratio to the same round's raw-segno):",
        "",
        *per_round_table(cases, rate=",.1f"),
    ]
    return "\n".join(lines) + "\n"


# --- main --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run.begin()
    workdir = Path(tempfile.mkdtemp(prefix="tollway-bench-qr-"))
    database_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
    scale, raw_pixels = segno_scale(args.size)
    try:
        wrk_path()
        check_same_image(args.size, scale)
        asyncio.run(prepare_database(database_url))
        script = workdir / "qr-miss.lua"
        script.write_text(MISS_SCRIPT)
        with running([]) as servers:
            log(f"starting granian on {TARGET} (qr only, anonymous limits lifted)")
            server = start_server(workdir, database_url, args.size)
            servers.append(server)
            cases = [
                Case(
                    "raw-segno",
                    in_process(raw_segno(scale)),
                    http=False,
                ),
                Case(
                    "tollway-render",
                    in_process(tollway_render(args.size)),
                    http=False,
                ),
                Case("http-miss", http_miss(server, script, args), http=True),
                Case("http-hit", http_hit(server, args), http=True),
            ]
            log(f"warming up: {WARMUP_SECONDS} s per case")
            for case in cases:
                case.measure(1, WARMUP_SECONDS)
                if case.http:
                    drained(server, args.size)
            log(f"measuring: {args.rounds} rounds")
            rounds(cases, server, args)
    except (LoadError, ServerError, BenchError) as error:
        log(f"bench: {error}")
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    publish(report(cases, args, run, raw_pixels=raw_pixels, scale=scale), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
