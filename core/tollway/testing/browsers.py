"""Debian's Chromium for page tests: where it is and how to launch it on a closed
network (playwright drives it; nothing downloads a browser)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tollway.testing.backends import unavailable

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""No background connections: on a closed network they would be refused, and a test
watching what leaves the page would see them."""


def chromium_launch_options() -> dict[str, Any]:
    """Keyword arguments for playwright's ``chromium.launch``; the test is unavailable
    (skipped, or failed under ``CI=true``) when Debian's chromium is not installed
    (``.ci/run`` installs it)."""
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        unavailable("Debian's chromium is not installed (.ci/run installs it)")
    return {"executable_path": CHROMIUM, "args": list(CHROMIUM_ARGS)}
