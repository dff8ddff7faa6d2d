"""Gateway overhead: the same trivial route served bare and behind the tollway pipeline.

One granian server (ASGI, 1 worker) per variant, all started in this run:

* ``bare``           - plain Litestar, no tollway (``apps:bare_app``);
* ``pipeline-memory`` - the tollway gateway with the in-memory rate limiter;
* ``pipeline-redis``  - the same with the Redis rate limiter (``--skip-redis`` drops it;
  it is skipped with a note when Redis does not answer);
* ``peer-litestar``   - what a Litestar team would write instead: Litestar's own
  rate limiting middleware and an API-key guard (``peers:litestar_peer_app``);
* ``peer-fastapi``    - the same on FastAPI with slowapi and an API-key dependency
  (``peers:fastapi_peer_app``); ``--skip-peers`` drops both peers;
* ``bare-uvicorn``    - only with ``--uvicorn``: bare on uvicorn, to compare servers.

Each server is warmed up with a short wrk run, then the variants are measured in
alternation (the order rotates every round) and the medians are reported, with each
variant's throughput as a ratio of bare's from the same run. Before measuring, every
keyed variant must refuse a wrong key and send its rate limit headers with the right
one. The targets are printed as PASS/MISS; the exit status is 0 either way, since
benchmarks inform and tests decide. Run with ``nox -s bench`` or
``python bench/run.py --help``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import platform
import secrets
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import apps
import peers
from common import (
    Measured,
    Run,
    add_output,
    add_redis_url,
    argument_parser,
    at_least_one,
    log,
    per_round_table,
    publish,
    redis_drop,
    rotating,
)
from loadgen import LoadError, Measurement, run_wrk, wrk_path
from servers import Server, ServerError, ServerKind, running

from tollway.testing import redis_unreachable

WARMUP_SECONDS = 3
BARE = "bare"
MEMORY = "pipeline-memory"
_RESERVED = {"DATABASE_URL", "PLUGINS", "REDIS_URL", "RATE_LIMIT_PREFIX"}


@dataclass
class Variant(Measured):
    description: str
    target: str
    env: dict[str, str]
    target_ratio: float | None = None
    """The minimum throughput ratio to bare this variant should reach."""
    limit_header: str | None = None
    """The rate limit header a keyed variant answers with (lower case); ``None``: not keyed."""
    peer: bool = False
    """Not tollway: a variant pipeline-memory should be ahead of."""
    kind: ServerKind = "granian"
    server: Server | None = None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser("run.py", __doc__)
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement (10)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    parser.add_argument("--rounds", type=int, default=3, help="measurements per variant (3)")
    parser.add_argument("--skip-redis", action="store_true", help="leave out the Redis variant")
    parser.add_argument(
        "--skip-peers",
        action="store_true",
        help="leave out the Litestar and FastAPI peers (what a team would write instead)",
    )
    parser.add_argument(
        "--litestar-window",
        choices=peers.LITESTAR_WINDOWS,
        default="second",
        help="peer-litestar's rate limit window (second): Litestar's limiter costs more\n"
        "per request the more requests its window has counted, so with day\n"
        "its throughput falls as the run goes on",
    )
    parser.add_argument(
        "--uvicorn",
        action="store_true",
        help="also serve bare on uvicorn (uvloop, httptools), to compare the servers",
    )
    add_redis_url(parser, "Redis for the Redis variant")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        dest="settings",
        help="a gateway setting for the pipeline variants, as TOLLWAY_<FIELD>\n"
        "(e.g. --set key_cache_ttl=60); recorded in the report",
    )
    add_output(parser, "gateway-overhead")
    args = parser.parse_args(argv)
    for item in args.settings:
        name, sep, _ = item.partition("=")
        if not sep or not name or name.upper() in _RESERVED:
            parser.error(f"--set expects FIELD=VALUE, not one of {sorted(_RESERVED)}: {item!r}")
    at_least_one(parser, args, "duration", "connections", "rounds")
    return args


# --- setup -------------------------------------------------------------------------


def variants(
    args: argparse.Namespace, database_url: str, redis_prefix: str, key: str
) -> list[Variant]:
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
            MEMORY,
            "tollway pipeline, in-memory rate limiter",
            "apps:gateway_app",
            gateway_env,
            target_ratio=0.85,
            limit_header="x-ratelimit-limit",
        ),
    ]
    if not args.skip_peers:
        peer_env = {peers.KEY_VARIABLE: key}
        chosen += [
            Variant(
                "peer-litestar",
                "Litestar's RateLimitMiddleware per key and an API-key guard",
                "peers:litestar_peer_app",
                {**peer_env, peers.WINDOW_VARIABLE: args.litestar_window},
                limit_header="ratelimit-limit",
                peer=True,
            ),
            Variant(
                "peer-fastapi",
                "FastAPI, slowapi per key and an API-key dependency",
                "peers:fastapi_peer_app",
                peer_env,
                limit_header="x-ratelimit-limit",
                peer=True,
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
                limit_header="x-ratelimit-limit",
            )
        )
    return chosen


# --- measuring ---------------------------------------------------------------------


def start(variant: Variant, log_dir: Path, headers: dict[str, str]) -> Server:
    server = Server(variant.name, variant.target, variant.env, log_dir, variant.kind)
    variant.server = server
    server.start(apps.PATH, headers)
    answered = server.probe(apps.PATH, headers)
    if variant.limit_header is not None:
        if variant.limit_header not in answered:
            raise ServerError(f"{variant.name}: no {variant.limit_header} header, no rate limit?")
        refused = status(server, {"Authorization": "Bearer tw_wrong"})
        if refused != 401:
            raise ServerError(f"{variant.name}: a wrong key answered {refused}, not 401")
    return server


def status(server: Server, headers: dict[str, str]) -> int:
    """The status ``GET apps.PATH`` answers with ``headers``."""
    request = urllib.request.Request(server.url(apps.PATH), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


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
    for index, variant in rotating(chosen, args.rounds):
        result = measure(variant, args, headers, seconds=args.duration)
        variant.runs.append(result)
        log(
            f"  round {index + 1}/{args.rounds} {variant.name:<16} {result.rps:>9.0f} req/s"
            f"  p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:6.2f} ms"
        )


# --- reporting ---------------------------------------------------------------------


def ratio(variant: Variant, bare: Variant) -> float:
    return variant.median("rps") / bare.median("rps")


def report(chosen: list[Variant], args: argparse.Namespace, run: Run, notes: list[str]) -> str:
    bare = chosen[0]
    lines = [
        "# Gateway overhead",
        "",
        run.headline("bench/run.py") + " (compare the ratios, not the absolute numbers).",
        "",
        run.machine(),
        f"- Python {platform.python_version()}, granian {version('granian')} (ASGI, 1 worker), "
        f"litestar {version('litestar')}, redis-py {version('redis')}"
        + (f", uvicorn {version('uvicorn')}" if args.uvicorn else "")
        + (
            f", fastapi {version('fastapi')}, slowapi {version('slowapi')}"
            if not args.skip_peers
            else ""
        ),
        f"- load: `wrk -t1 -c{args.connections} -d{args.duration}s --latency`, "
        f"{args.rounds} rounds in rotating order after a {WARMUP_SECONDS} s warm-up per "
        f"server; medians below; whole run {run.elapsed:.0f} s",
        f'- route: `GET {apps.PATH}` -> `{{"ok": true}}`; keyed variants send a valid key '
        f"(scope `{apps.SCOPE}`, plan of {apps.REQUESTS_PER_DAY:,} requests/day), and bare "
        "gets the same header",
        *(
            [
                "- peers (`bench/peers.py`): the same key check (SHA-256, in-memory table) and "
                "scope check, and a quota per key that never trips: Litestar's "
                f"RateLimitMiddleware (window: 1 {args.litestar_window}) and a guard; FastAPI "
                "with slowapi (window: 1 day) and a dependency"
            ]
            if not args.skip_peers
            else []
        ),
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
    lines += per_round_table(chosen)
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
        verdicts.append(
            f"{variant.name} >= {variant.target_ratio:.2f}: "
            f"**{passed(value >= variant.target_ratio)}** ({value:.2f})"
        )
    memory = next(variant for variant in chosen if variant.name == MEMORY)
    for peer in (variant for variant in chosen if variant.peer):
        ours, theirs = ratio(memory, bare), ratio(peer, bare)
        verdicts.append(
            f"{memory.name} ahead of {peer.name}: **{passed(ours > theirs)}** "
            f"({ours:.2f} against {theirs:.2f})"
        )
    return "Targets (throughput as a ratio to bare): " + "; ".join(verdicts)


def passed(verdict: bool) -> str:
    return "PASS" if verdict else "MISS"


# --- main --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run.begin()
    wrk_path()
    workdir = Path(tempfile.mkdtemp(prefix="tollway-bench-"))
    database_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
    redis_prefix = f"tollway-bench:{secrets.token_hex(6)}:"
    notes: list[str] = []
    if not args.skip_redis and (problem := asyncio.run(redis_unreachable(args.redis_url))):
        log(f"Redis at {args.redis_url} unreachable ({problem}): skipping the Redis variant")
        notes.append(f"Redis variant skipped: {args.redis_url} unreachable ({problem}).")
        args.skip_redis = True
    try:
        key = asyncio.run(apps.prepare_database(database_url))
        chosen = variants(args, database_url, redis_prefix, key)
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
    publish(report(chosen, args, run, notes), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
