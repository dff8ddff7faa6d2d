"""Gateway overhead: the same trivial route served bare and behind the tollway pipeline.

One granian server (ASGI, 1 worker) per variant, all started in this run:

* ``bare``           - plain Litestar, no tollway (``apps:bare_app``);
* ``pipeline-memory`` - the tollway gateway with the in-memory rate limiter;
* ``pipeline-redis``  - the same with the Redis rate limiter (``--skip-redis`` drops it;
  it is skipped with a note when Redis does not answer);
* ``bare-uvicorn``    - only with ``--uvicorn``: bare on uvicorn, to compare servers.

Each server is warmed up with a short wrk run, then the variants are measured in
alternation (the order rotates every round) and the medians are reported, with each
pipeline variant's throughput as a ratio of bare's from the same run. The targets are
printed as PASS/MISS; the exit status is 0 either way, since benchmarks inform and
tests decide. Run with ``nox -s bench`` or ``python bench/run.py --help``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import secrets
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from types import FrameType

import apps
from loadgen import LoadError, Measurement, run_wrk, wrk_path
from servers import BENCH_DIR, Server, ServerError, ServerKind, running

from tollway import Gateway, load_settings

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_OUTPUT = BENCH_DIR / "results" / "gateway-overhead.md"
WARMUP_SECONDS = 3
BARE = "bare"
_RESERVED = {"DATABASE_URL", "PLUGINS", "REDIS_URL", "RATE_LIMIT_PREFIX"}


@dataclass
class Variant:
    name: str
    description: str
    target: str
    env: dict[str, str]
    target_ratio: float | None = None
    """The minimum throughput ratio to bare this variant should reach."""
    kind: ServerKind = "granian"
    server: Server | None = None
    runs: list[Measurement] = field(default_factory=list)

    @property
    def keyed(self) -> bool:
        return self.target != "apps:bare_app"

    def median(self, attribute: str) -> float:
        return float(statistics.median(getattr(run, attribute) for run in self.runs))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run.py", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement (10)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    parser.add_argument("--rounds", type=int, default=3, help="measurements per variant (3)")
    parser.add_argument("--skip-redis", action="store_true", help="leave out the Redis variant")
    parser.add_argument(
        "--uvicorn",
        action="store_true",
        help="also serve bare on uvicorn (uvloop, httptools), to compare the servers",
    )
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("TOLLWAY_BENCH_REDIS_URL", DEFAULT_REDIS_URL),
        help=f"Redis for the Redis variant ($TOLLWAY_BENCH_REDIS_URL, {DEFAULT_REDIS_URL})",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        dest="settings",
        help="a gateway setting for the pipeline variants, as TOLLWAY_<FIELD>\n"
        "(e.g. --set key_cache_ttl=60); recorded in the report",
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="Markdown report file")
    args = parser.parse_args(argv)
    for item in args.settings:
        name, sep, _ = item.partition("=")
        if not sep or not name or name.upper() in _RESERVED:
            parser.error(f"--set expects FIELD=VALUE, not one of {sorted(_RESERVED)}: {item!r}")
    for name in ("duration", "connections", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    return args


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def publish(document: str, output: Path) -> None:
    """Print a bench's Markdown report and write it to ``output``."""
    print(document, end="")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(document)
    log(f"written to {output}")


# --- setup -------------------------------------------------------------------------


async def prepare_database(database_url: str) -> str:
    """Migrate the database, create an account on the bench plan and return its key."""
    settings = load_settings(
        environ={}, database_url=database_url, plugins=[apps.PRODUCT], demo=False
    )
    gateway = Gateway(settings, extra_plugins=apps.plugins())
    try:
        await gateway.migrate()
        account = await gateway.accounts.create_account("bench", {apps.PRODUCT: apps.PLAN})
        created = await gateway.accounts.create_key(account, name="bench", scopes=[apps.SCOPE])
        return created.key
    finally:
        await gateway.database.dispose()


async def redis_reachable(url: str) -> str | None:
    """``None`` if Redis answers PING, else why not."""
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        await client.ping()
        return None
    except (OSError, redis.exceptions.RedisError) as error:
        return str(error) or type(error).__name__
    finally:
        await client.aclose()


async def redis_drop(url: str, prefix: str) -> int:
    """Delete the run's rate limit keys; returns the hits they had counted."""
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    try:
        counted = 0
        async for name in client.scan_iter(match=f"{prefix}*", count=1000):
            value = await client.get(name)
            counted += int(value) if value is not None and value.isdigit() else 0
            await client.delete(name)
        return counted
    finally:
        await client.aclose()


def variants(args: argparse.Namespace, database_url: str, redis_prefix: str) -> list[Variant]:
    gateway_env = {
        "TOLLWAY_DATABASE_URL": database_url,
        "TOLLWAY_PLUGINS": apps.PRODUCT,
        "TOLLWAY_DEMO": "false",
        "TOLLWAY_AUTO_MIGRATE": "false",
    }
    for item in args.settings:
        name, _, value = item.partition("=")
        gateway_env[f"TOLLWAY_{name.upper()}"] = value
    chosen = [
        Variant(BARE, "plain Litestar, same handler, no tollway", "apps:bare_app", {}),
        Variant(
            "pipeline-memory",
            "tollway pipeline, in-memory rate limiter",
            "apps:gateway_app",
            gateway_env,
            target_ratio=0.85,
        ),
    ]
    if args.uvicorn:
        chosen.append(
            Variant(
                "bare-uvicorn",
                "plain Litestar on uvicorn (uvloop, httptools) instead of granian",
                "apps:bare_app",
                {},
                kind="uvicorn",
            )
        )
    if not args.skip_redis:
        chosen.append(
            Variant(
                "pipeline-redis",
                "tollway pipeline, Redis rate limiter",
                "apps:gateway_app",
                {
                    **gateway_env,
                    "TOLLWAY_REDIS_URL": args.redis_url,
                    "TOLLWAY_RATE_LIMIT_PREFIX": redis_prefix,
                },
                target_ratio=0.75,
            )
        )
    return chosen


# --- measuring ---------------------------------------------------------------------


def start(variant: Variant, log_dir: Path, headers: dict[str, str]) -> Server:
    server = Server(variant.name, variant.target, variant.env, log_dir, variant.kind)
    variant.server = server
    server.start(apps.PATH, headers)
    answered = server.probe(apps.PATH, headers)
    if variant.keyed and "x-ratelimit-limit" not in answered:
        raise ServerError(f"{variant.name}: no rate limit headers, is the pipeline running?")
    return server


def measure(
    variant: Variant, args: argparse.Namespace, headers: dict[str, str], *, seconds: int
) -> Measurement:
    assert variant.server is not None
    return run_wrk(
        variant.server.url(apps.PATH),
        duration=seconds,
        connections=args.connections,
        headers=headers,
    )


def rounds(chosen: list[Variant], args: argparse.Namespace, headers: dict[str, str]) -> None:
    """Alternate the variants, rotating the order every round so none is always first."""
    for index in range(args.rounds):
        shift = index % len(chosen)
        for variant in chosen[shift:] + chosen[:shift]:
            result = measure(variant, args, headers, seconds=args.duration)
            variant.runs.append(result)
            log(
                f"  round {index + 1}/{args.rounds} {variant.name:<16} {result.rps:>9.0f} req/s"
                f"  p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:6.2f} ms"
            )


# --- reporting ---------------------------------------------------------------------


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def ratio(variant: Variant, bare: Variant) -> float:
    return variant.median("rps") / bare.median("rps")


def report(
    chosen: list[Variant],
    args: argparse.Namespace,
    *,
    started: datetime,
    load: tuple[float, float, float],
    elapsed: float,
    notes: list[str],
) -> str:
    bare = chosen[0]
    lines = [
        "# Gateway overhead",
        "",
        f"One run of `bench/run.py` on {started:%Y-%m-%d %H:%M} UTC; a shared, noisy machine "
        "(compare the ratios, not the absolute numbers).",
        "",
        f"- machine: {os.cpu_count()} cores, {_cpu_model()}; load average at start "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}",
        f"- Python {platform.python_version()}, granian {version('granian')} (ASGI, 1 worker), "
        f"litestar {version('litestar')}, redis-py {version('redis')}"
        + (f", uvicorn {version('uvicorn')}" if args.uvicorn else ""),
        f"- load: `wrk -t1 -c{args.connections} -d{args.duration}s --latency`, "
        f"{args.rounds} rounds in rotating order after a {WARMUP_SECONDS} s warm-up per "
        f"server; medians below; whole run {elapsed:.0f} s",
        f'- route: `GET {apps.PATH}` -> `{{"ok": true}}`; keyed variants send a valid key '
        f"(scope `{apps.SCOPE}`, plan of {apps.REQUESTS_PER_DAY:,} requests/day), and bare "
        "gets the same header",
        *(
            [f"- gateway settings: {', '.join(f'`{item}`' for item in args.settings)}"]
            if args.settings
            else []
        ),
        "",
        "| variant | req/s | p50 (ms) | p99 (ms) | ratio to bare |",
        "|---|---:|---:|---:|---:|",
    ]
    for variant in chosen:
        lines.append(
            f"| {variant.name} | {variant.median('rps'):,.0f} | {variant.median('p50_ms'):.2f} "
            f"| {variant.median('p99_ms'):.2f} | {ratio(variant, bare):.2f} |"
        )
    lines += ["", targets(chosen), "", "Per round (req/s; ratio to the same round's bare):", ""]
    lines += [
        "| round | " + " | ".join(variant.name for variant in chosen) + " |",
        "|---:|" + "---:|" * len(chosen),
    ]
    for index in range(args.rounds):
        base = bare.runs[index].rps
        cells = [f"{bare.runs[index].rps:,.0f}"] + [
            f"{variant.runs[index].rps:,.0f} ({variant.runs[index].rps / base:.2f})"
            for variant in chosen[1:]
        ]
        lines.append(f"| {index + 1} | " + " | ".join(cells) + " |")
    if notes:
        lines += ["", *(f"Note: {note}" for note in notes)]
    return "\n".join(lines) + "\n"


def targets(chosen: list[Variant]) -> str:
    bare = chosen[0]
    verdicts = []
    for variant in chosen:
        if variant.target_ratio is None:
            continue
        value = ratio(variant, bare)
        verdict = "PASS" if value >= variant.target_ratio else "MISS"
        verdicts.append(
            f"{variant.name} >= {variant.target_ratio:.2f}: **{verdict}** ({value:.2f})"
        )
    return "Targets (pipeline/bare throughput): " + "; ".join(verdicts)


# --- main --------------------------------------------------------------------------


def _terminate(signum: int, frame: FrameType | None) -> None:
    # Turn SIGTERM (e.g. from a CI timeout) into an exception, so cleanup runs.
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    wrk_path()
    started = datetime.now(UTC)
    clock = time.monotonic()
    load = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="tollway-bench-"))
    database_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
    redis_prefix = f"tollway-bench:{secrets.token_hex(6)}:"
    notes: list[str] = []
    if not args.skip_redis and (problem := asyncio.run(redis_reachable(args.redis_url))):
        log(f"Redis at {args.redis_url} unreachable ({problem}): skipping the Redis variant")
        notes.append(f"Redis variant skipped: {args.redis_url} unreachable ({problem}).")
        args.skip_redis = True
    chosen = variants(args, database_url, redis_prefix)
    try:
        key = asyncio.run(prepare_database(database_url))
        headers = {"Authorization": f"Bearer {key}"}
        with running([]) as servers:
            for variant in chosen:
                log(f"starting {variant.name}: {variant.description}")
                servers.append(start(variant, workdir, headers))
                measure(variant, args, headers, seconds=WARMUP_SECONDS)
            log(f"measuring: {args.rounds} rounds of {args.duration} s per variant")
            rounds(chosen, args, headers)
    except (LoadError, ServerError) as error:
        log(f"bench: {error}")
        return 1
    finally:
        if not args.skip_redis:
            with contextlib.suppress(Exception):
                counted = asyncio.run(redis_drop(args.redis_url, redis_prefix))
                log(f"Redis counted {counted:,} hits under {redis_prefix} (now deleted)")
        shutil.rmtree(workdir, ignore_errors=True)
    text = report(
        chosen,
        args,
        started=started,
        load=load,
        elapsed=time.monotonic() - clock,
        notes=notes,
    )
    publish(text, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
