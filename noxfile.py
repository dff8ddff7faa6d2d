"""Every developer task, in one place: ``nox -s tests``, ``contracts``, ``lint``,
``bench``, ``serve``. Each session installs the core and every plugin under plugins/
in editable mode into its own virtualenv; all but ``serve`` add the test tooling and
the harness."""

from __future__ import annotations

import os
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PLUGINS = sorted(str(path.parent) for path in ROOT.glob("plugins/*/pyproject.toml"))

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True


def install(session: nox.Session, *extras: str) -> None:
    """The core with ``extras`` and every distribution under plugins/, editable; the
    contract harness only with the ``test`` extra, since it brings schemathesis and
    pytest, which a served gateway never imports."""
    core = f".[{','.join(extras)}]" if extras else "."
    harness = ["harness"] if "test" in extras else []
    editable = [item for path in (core, *PLUGINS, *harness) for item in ("-e", path)]
    session.install(*editable)


# The suite mostly waits (on PostgreSQL, Redis, subprocesses, sockets), so it runs
# in more processes than there are cores. Each worker has its own databases, Redis
# prefixes and ports (tollway.testing). TOLLWAY_TEST_WORKERS=0 runs it in one process.
TEST_WORKERS = os.environ.get("TOLLWAY_TEST_WORKERS", "4")


@nox.session
def tests(session: nox.Session) -> None:
    """The whole suite: SQLite + memory limiter, then PostgreSQL + Redis (both in one
    run: backend fixtures are parametrized), contract tests included, in parallel."""
    install(session, "test")
    # The background removal tests use the real U²-Net-p weights (idempotent), and
    # rembg's numba code compiled once, before every worker would compile it.
    session.run("tollway", "removebg", "models", "fetch", "--compile")
    # worksteal: a worker that runs out takes queued tests from a busy one, so the
    # minute-long contract tests do not leave one worker running alone at the end.
    session.run("pytest", "-n", TEST_WORKERS, "--dist", "worksteal", *session.posargs)


@nox.session
def contracts(session: nox.Session) -> None:
    """Only the schemathesis contract tests and the drift test."""
    install(session, "test")
    session.run("pytest", "-m", "contract", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    install(session, "test", "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    packages = [
        str(init.parent) for path in PLUGINS for init in Path(path).glob("tollway_*/__init__.py")
    ]
    session.run("mypy", "core/tollway", *packages, "harness/tollway_harness")


@nox.session
def bench(session: nox.Session) -> None:
    """Gateway overhead against a bare Litestar route (in rounds, and in back-to-back
    pairs with CPU per request), the public QR API against raw segno, the chat API,
    short link redirects and the point of sale's catalog and orders against the trivial
    route (driven by wrk; links also open loop and analytics over a million clicks, the
    point of sale its reports over a year of orders), the analytics product's reports
    and exports over a year of orders and a million clicks through its API in process,
    webhook delivery latency and throughput, background removal through the API
    against rembg called directly, scale-out from 1 to 2 processes with the Redis
    limiter's round trips, and a 10-minute soak of a gateway + worker deployment; see
    bench/ and docs/benchmarks.md. Results go to bench/results/."""
    install(session, "test", "bench")
    session.run("python", "bench/run.py", *session.posargs)
    session.run("python", "bench/paired.py")
    session.run("python", "bench/qr.py")
    session.run("python", "bench/webhooks.py")
    session.run("python", "bench/datapath.py")
    session.run("python", "bench/chat.py")
    session.run("python", "bench/latency.py")
    session.run("python", "bench/links.py")
    session.run("python", "bench/pos.py")
    session.run("python", "bench/analytics.py")
    session.run("tollway", "removebg", "models", "fetch")
    session.run("python", "bench/removebg.py")
    session.run("python", "bench/scale.py")
    session.run("python", "bench/soak.py", "--minutes", "10")


@nox.session
def serve(session: nox.Session) -> None:
    """The gateway with every plugin on SQLite and the in-memory limiter; prints a
    demo key on first start. Extra arguments go to ``tollway serve``. Installs what a
    deployment installs: no test tooling, no harness."""
    install(session)
    session.run("tollway", "serve", *session.posargs)
