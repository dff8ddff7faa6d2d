"""What the benchmark scripts share: their command line's common options, the run's
header (when, on which machine, under what load), measurements taken in rounds of
rotating order and their medians, and the Redis and PostgreSQL a run uses.

Databases and servers come from the public testing kit (``tollway.testing``), the
same ones the test suite runs on.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import signal
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TypeVar

from loadgen import Measurement
from sqlalchemy import text

from tollway.db import Database
from tollway.testing import POSTGRES_URL, create_postgres_database, drop_postgres_database

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"

T = TypeVar("T")


class BenchError(RuntimeError):
    """The run could not measure what it set out to (wrong data, lost deliveries, a
    server or database that does not answer)."""


class Unreachable(BenchError):
    """A server the run needs does not answer."""


def log(message: str) -> None:
    """Progress, on stderr: stdout carries the report."""
    print(message, file=sys.stderr, flush=True)


def publish(document: str, output: Path) -> None:
    """Print a bench's Markdown report and write it to ``output``."""
    print(document, end="")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(document)
    log(f"written to {output}")


# --- the command line --------------------------------------------------------------


def argument_parser(script: str, description: str | None) -> argparse.ArgumentParser:
    """A parser for ``bench/<script>``, its docstring as the help."""
    return argparse.ArgumentParser(
        prog=f"bench/{script}",
        description=description,
        formatter_class=argparse.RawTextHelpFormatter,
    )


def add_output(parser: argparse.ArgumentParser, report: str) -> None:
    """``--output``, by default ``bench/results/<report>.md``."""
    default = RESULTS_DIR / f"{report}.md"
    parser.add_argument("--output", type=Path, default=default, help="Markdown report file")


BACKENDS = frozenset({"sqlite", "postgresql"})


def _backends(text: str) -> frozenset[str]:
    chosen = frozenset(name.strip() for name in text.split(",") if name.strip())
    if not chosen or not chosen <= BACKENDS:
        raise argparse.ArgumentTypeError("takes sqlite and/or postgresql")
    return chosen


def add_backends(parser: argparse.ArgumentParser, note: str = "") -> None:
    """``--backends``: a set of ``sqlite`` and ``postgresql``, by default both."""
    parser.add_argument(
        "--backends",
        type=_backends,
        default="sqlite,postgresql",
        help=f"comma-separated: sqlite, postgresql (both{note})",
    )


def add_redis_url(parser: argparse.ArgumentParser, what: str) -> None:
    """``--redis-url``, by default ``$TOLLWAY_BENCH_REDIS_URL`` or the local Redis."""
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("TOLLWAY_BENCH_REDIS_URL", DEFAULT_REDIS_URL),
        help=f"{what} ($TOLLWAY_BENCH_REDIS_URL, {DEFAULT_REDIS_URL})",
    )


def at_least_one(parser: argparse.ArgumentParser, args: argparse.Namespace, *names: str) -> None:
    """Refuse a count option (``duration``, ``rounds``...) below 1."""
    for name in names:
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")


# --- the run and its header --------------------------------------------------------


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _terminate(signum: int, frame: FrameType | None) -> None:
    # Turn SIGTERM (e.g. from a CI timeout) into an exception, so cleanup runs.
    raise SystemExit(128 + signum)


@dataclass(frozen=True)
class Run:
    """When a run started and how busy the machine was: its report's header."""

    started: datetime
    load: tuple[float, float, float]
    clock: float

    @classmethod
    def begin(cls) -> Run:
        """Note the start; from now on SIGTERM exits through the clean-up code."""
        signal.signal(signal.SIGTERM, _terminate)
        return cls(datetime.now(UTC), os.getloadavg(), time.monotonic())

    @property
    def elapsed(self) -> float:
        """Seconds since the run began."""
        return time.monotonic() - self.clock

    def headline(self, command: str) -> str:
        """``One run of `command` on <date> UTC; a shared, noisy machine``."""
        when = f"{self.started:%Y-%m-%d %H:%M} UTC"
        return f"One run of `{command}` on {when}; a shared, noisy machine"

    def machine(self) -> str:
        """The header's ``- machine:`` item: cores, CPU model, load average at start."""
        first, second, third = self.load
        return (
            f"- machine: {os.cpu_count()} cores, {cpu_model()}; load average at start "
            f"{first:.2f} / {second:.2f} / {third:.2f}"
        )


# --- measurements ------------------------------------------------------------------


@dataclass
class Measured:
    """Something measured in rounds: a variant, a case."""

    name: str
    runs: list[Measurement] = field(default_factory=list, kw_only=True)

    def median(self, attribute: str) -> float:
        """The median of ``attribute`` (``rps``, ``p50_ms``, ``p99_ms``) over the runs."""
        return float(statistics.median(getattr(run, attribute) for run in self.runs))


def rotating(items: Sequence[T], rounds: int) -> Iterator[tuple[int, T]]:
    """``(round, item)`` for every item in each of ``rounds`` rounds, the order
    rotated every round so that no item is always measured first."""
    for index in range(rounds):
        shift = index % len(items)
        for item in [*items[shift:], *items[:shift]]:
            yield index, item


def per_round_table(
    columns: Sequence[Measured], *, rate: str = ",.0f", ratio: str = ".2f"
) -> list[str]:
    """Markdown rows of each round's throughput per column, with its ratio to the
    first column's in the same round."""
    first = columns[0]
    lines = [
        "| round | " + " | ".join(column.name for column in columns) + " |",
        "|---:|" + "---:|" * len(columns),
    ]
    for index, run in enumerate(first.runs):
        cells = [format(run.rps, rate)] + [
            f"{column.runs[index].rps:{rate}} ({column.runs[index].rps / run.rps:{ratio}})"
            for column in columns[1:]
        ]
        lines.append(f"| {index + 1} | " + " | ".join(cells) + " |")
    return lines


def quantile(values: Sequence[float], percent: int) -> float:
    """The ``percent`` percentile of ``values`` (inclusive method); 0.0 when empty."""
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[percent - 1]


# --- Redis and PostgreSQL ----------------------------------------------------------


async def redis_drop(url: str, prefix: str) -> int:
    """Delete a run's keys (``prefix*``); returns the hits its fixed-window counters
    (strings; sliding windows are sorted sets) had counted."""
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    try:
        counted = 0
        async for name in client.scan_iter(match=f"{prefix}*", count=1000):
            if await client.type(name) == b"string":
                value = await client.get(name)
                counted += int(value) if value is not None and value.isdigit() else 0
            await client.delete(name)
        return counted
    finally:
        await client.aclose()


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    """A throwaway database on the test suite's PostgreSQL server
    (``TOLLWAY_TEST_POSTGRES_URL``), dropped afterwards; :class:`Unreachable` when the
    server does not answer."""
    try:
        url = asyncio.run(create_postgres_database())
    except Exception as error:  # asyncpg raises its own errors besides OSError
        raise Unreachable(f"PostgreSQL at {POSTGRES_URL} unreachable ({error})") from error
    try:
        yield url
    finally:
        asyncio.run(drop_postgres_database(url))


async def postgres_version(database_url: str) -> str:
    """What ``SHOW server_version`` answers, e.g. ``16.4 (Debian 16.4-1.pgdg120+1)``."""
    database = Database(database_url)
    try:
        async with database.engine.connect() as connection:
            return str(await connection.scalar(text("SHOW server_version")))
    finally:
        await database.dispose()
