"""Gateway overhead in pairs: bare and each variant measured back to back, many times.

``bench/run.py`` measures each variant for several seconds in rotating rounds; on a
shared machine bare alone moves by a third from one round to the next, so the median
ratio it reports moves by as much as the gap it is meant to show. This bench asks the
same question more steadily:

* a *pair* is one short wrk run against bare and one against the variant, back to back
  (the order alternating from pair to pair), so both see about the same machine; the
  pair's ratio is the variant's throughput over bare's;
* besides throughput, it counts each server's CPU time (every thread of granian's
  supervisor and worker processes, from ``/proc`` via psutil) over each run: CPU per
  request is what the code costs, and it moves less with the neighbours' load than
  requests per second do. Its ratio is bare's CPU per request over the variant's, so
  that, like throughput, 1.0 is "as cheap as bare";
* the medians and quartiles of the pairs' ratios are reported.

Variants: ``pipeline-memory`` (the gateway, in-memory limiter), and the control
``bare-headers`` (``apps:bare_headers_app``: bare sending the same six header names
and sizes the gateway adds), which prices the bytes alone. ``--skip-control`` leaves
the control out. The servers are those of ``bench/run.py``, on one SQLite file.

    python bench/paired.py --pairs 15 --duration 3
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import apps
import psutil
from common import Run, add_output, argument_parser, at_least_one, log, publish, quantile
from loadgen import LoadError, Measurement, run_wrk, wrk_path
from servers import Server, ServerError, running

WARMUP_SECONDS = 3


@dataclass
class Side:
    """One server of the pairs, and what each of its runs measured."""

    name: str
    description: str
    target: str
    env: dict[str, str]
    server: Server | None = None
    runs: list[Measurement] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)
    """CPU microseconds per request of each run."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("paired.py", __doc__)
    parser.add_argument("--pairs", type=int, default=15, help="pairs per variant (15)")
    parser.add_argument("--duration", type=int, default=3, help="seconds per run (3)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    parser.add_argument(
        "--skip-control", action="store_true", help="leave out bare-headers (the control)"
    )
    add_output(parser, "gateway-overhead-pairs")
    args = parser.parse_args(argv)
    at_least_one(parser, args, "pairs", "duration", "connections")
    return args


def cpu_seconds(server: Server) -> float:
    """User and system CPU of the server's processes (supervisor and workers) so far."""
    assert server.pid is not None
    root = psutil.Process(server.pid)
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        times = process.cpu_times()
        total += times.user + times.system
    return total


def measure(side: Side, args: argparse.Namespace, headers: dict[str, str], seconds: int) -> None:
    assert side.server is not None
    before = cpu_seconds(side.server)
    result = run_wrk(
        side.server.url(apps.PATH), duration=seconds, connections=args.connections, headers=headers
    )
    spent = cpu_seconds(side.server) - before
    side.runs.append(result)
    side.cpu_us.append(spent / max(result.requests, 1) * 1e6)


def pairs(
    bare: Side, others: list[Side], args: argparse.Namespace, headers: dict[str, str]
) -> None:
    for index in range(args.pairs):
        for other in others:
            order = (bare, other) if index % 2 == 0 else (other, bare)
            for side in order:
                measure(side, args, headers, args.duration)
            log(
                f"  pair {index + 1}/{args.pairs} {other.name:<16}"
                f" {other.runs[-1].rps / bare.runs[-1].rps:5.2f} of bare's req/s,"
                f" {bare.cpu_us[-1] / other.cpu_us[-1]:5.2f} of its CPU per request"
            )


def ratios(bare: Side, other: Side) -> tuple[list[float], list[float]]:
    """Per pair: the other's throughput over bare's, and bare's CPU per request over
    the other's; ``bare`` holds only bare's runs paired with ``other``'s, in order."""
    return (
        [mine.rps / theirs.rps for mine, theirs in zip(other.runs, bare.runs, strict=True)],
        [theirs / mine for mine, theirs in zip(other.cpu_us, bare.cpu_us, strict=True)],
    )


def summary(values: list[float]) -> str:
    return (
        f"{statistics.median(values):.2f} ({quantile(values, 25):.2f}-{quantile(values, 75):.2f})"
    )


def report(bare: Side, others: list[Side], args: argparse.Namespace, run: Run) -> str:
    lines = [
        "# Gateway overhead in pairs",
        "",
        run.headline("python bench/paired.py"),
        "",
        run.machine(),
        f"- load: {args.pairs} pairs per variant, each `wrk -t1 -c{args.connections}"
        f" -d{args.duration}s --latency` against bare then the variant (the order"
        " alternating), after a 3 s warm-up per server; CPU per request from the server"
        " processes' user + system time (psutil) over each run",
        '- route: `GET /v1/bench/ping` -> `{"ok": true}` with a valid key (bare gets the'
        " same header)",
        "",
        "| variant | ratio to bare, req/s: median (quartiles) |"
        " ratio to bare, CPU per request: median (quartiles) |"
        " CPU per request (µs), median | bare's, same pairs |",
        "|---|---:|---:|---:|---:|",
    ]
    for index, other in enumerate(others):
        # Bare ran once per pair per variant, in the variants' order.
        mine = slice(index, None, len(others))
        paired_bare = Side(bare.name, "", "", {}, runs=bare.runs[mine], cpu_us=bare.cpu_us[mine])
        throughput, cpu = ratios(paired_bare, other)
        lines.append(
            f"| {other.name} | {summary(throughput)} | {summary(cpu)} |"
            f" {statistics.median(other.cpu_us):.1f} |"
            f" {statistics.median(paired_bare.cpu_us):.1f} |"
        )
    lines += ["", "Variants:", ""]
    lines += [f"- `{side.name}`: {side.description} (`{side.target}`)" for side in [bare, *others]]
    lines += ["", f"Whole run: {run.elapsed:.0f} s.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run.begin()
    wrk_path()
    workdir = Path(tempfile.mkdtemp(prefix="tollway-paired-"))
    database_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
    gateway_env = {
        "TOLLWAY_DATABASE_URL": database_url,
        "TOLLWAY_PLUGINS": apps.PRODUCT,
        "TOLLWAY_DEMO": "false",
        "TOLLWAY_AUTO_MIGRATE": "false",
    }
    bare = Side("bare", "plain Litestar, same handler, no tollway", "apps:bare_app", {})
    others = [
        Side(
            "pipeline-memory",
            "the tollway pipeline, in-memory rate limiter",
            "apps:gateway_app",
            gateway_env,
        )
    ]
    if not args.skip_control:
        others.insert(
            0,
            Side(
                "bare-headers",
                "bare sending the six headers the gateway adds (names and sizes)",
                "apps:bare_headers_app",
                {},
            ),
        )
    try:
        key = asyncio.run(apps.prepare_database(database_url))
        headers = {"Authorization": f"Bearer {key}"}
        with running([]) as servers:
            for side in [bare, *others]:
                log(f"starting {side.name}: {side.description}")
                side.server = Server(side.name, side.target, side.env, workdir)
                servers.append(side.server)
                side.server.start(apps.PATH, headers)
                measure(side, args, headers, WARMUP_SECONDS)
                side.runs.clear()
                side.cpu_us.clear()
            log(f"measuring: {args.pairs} pairs of {args.duration} s runs per variant")
            pairs(bare, others, args, headers)
    except (LoadError, ServerError) as error:
        log(f"paired: {error}")
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    publish(report(bare, others, args, run), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
