"""Instructions per request, in process, counted by valgrind's callgrind.

Wall-clock figures on a shared 2-core machine move by a tenth from run to run, more
than most changes to the request path; an instruction count does not move with the
load beside it. So this counts what the CPU executes for one request through each app,
in process as ``bench/micro.py`` sends them (no server, no network): each variant runs
in a child process under ``valgrind --tool=callgrind``, which warms the app up, then
sends ``--requests`` requests inside ``sys.call_tracing`` while callgrind collects
only there (``--toggle-collect=sys_call_tracing``). Instructions are not time (a cache
miss costs more than an add), so this complements the timed benches; it does not
replace them.

Variants: ``bare`` (the route on plain Litestar, as in ``bench/run.py``) and
``pipeline-memory`` (the gateway with the in-memory limiter and a valid key).

    python bench/instructions.py [--requests N] [--output FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import apps
from common import RESULTS_DIR, Run, argument_parser, log, publish
from litestar import Litestar
from micro import request_step

from tollway import Gateway, load_settings
from tollway.app import create_app

VARIANTS = ("bare", "pipeline-memory")
WARM_UP = 500


def child(variant: str, requests: int) -> None:
    """Under callgrind: build ``variant``'s app, warm it up, then send ``requests``
    requests inside ``sys.call_tracing``, the only code callgrind counts."""
    workdir = Path(tempfile.mkdtemp(prefix="tollway-instructions-"))
    loop = asyncio.new_event_loop()
    try:
        database_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
        key = loop.run_until_complete(apps.prepare_database(database_url))
        app: Litestar
        if variant == "bare":
            app = apps.bare_app()
        else:
            settings = load_settings(
                environ={},
                database_url=database_url,
                plugins=[apps.PRODUCT],
                demo=False,
                key_cache_ttl=3600.0,
            )
            app = create_app(Gateway(settings, extra_plugins=apps.plugins()))
        headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {key}".encode())]
        step = request_step(app, headers)

        async def run(count: int) -> None:
            for _ in range(count):
                await step()

        loop.run_until_complete(run(WARM_UP))
        sys.call_tracing(loop.run_until_complete, (run(requests),))
    finally:
        loop.close()
        shutil.rmtree(workdir, ignore_errors=True)


def counted(variant: str, requests: int) -> int:
    """Instructions callgrind collected for ``requests`` requests of ``variant``."""
    with tempfile.TemporaryDirectory(prefix="tollway-callgrind-") as out:
        command = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=sys_call_tracing",
            f"--callgrind-out-file={out}/callgrind.out",
            sys.executable,
            __file__,
            "--child",
            variant,
            "--requests",
            str(requests),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        found = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode != 0 or found is None:
            raise RuntimeError(f"callgrind run of {variant} failed:\n{done.stderr[-2000:]}")
        return int(found.group(1))


def report(run: Run, requests: int, counts: dict[str, int]) -> str:
    bare = counts["bare"] / requests
    lines = [
        "# Instructions per request, in process",
        "",
        run.headline(f"python bench/instructions.py --requests {requests}") + ".",
        "",
        run.machine(),
        f"- each variant in a child under `valgrind --tool=callgrind`: {WARM_UP} warm-up "
        f"requests, then {requests} counted; `GET /v1/bench/ping` through the ASGI app, "
        "no server",
        "",
        "| variant | instructions per request | over bare | ratio |",
        "|---|---:|---:|---:|",
    ]
    for variant, total in counts.items():
        each = total / requests
        lines.append(f"| {variant} | {each:,.0f} | {each - bare:+,.0f} | {each / bare:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser("instructions.py", __doc__)
    parser.add_argument("--requests", type=int, default=2000, help="requests counted (2000)")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument(
        "--output", type=Path, default=RESULTS_DIR / "instructions.md", help="report file"
    )
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.requests)
        return 0
    if shutil.which("valgrind") is None:
        log("instructions.py: valgrind is not installed (apt-get install valgrind)")
        return 1
    run = Run.begin()
    counts: dict[str, int] = {}
    for variant in VARIANTS:
        log(f"counting {variant} ...")
        counts[variant] = counted(variant, args.requests)
    publish(report(run, args.requests, counts), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
