"""Debian's Chromium for page tests: where it is, how to launch it on a closed network
(playwright drives it; nothing downloads a browser), and the ``chromium`` fixture."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tollway.testing.backends import unavailable

if TYPE_CHECKING:
    from playwright.async_api import Browser

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


@pytest.fixture(scope="module")
async def chromium() -> AsyncIterator[Browser]:
    """Debian's Chromium under playwright's async API, one for a test module's tests
    (each opens its own pages)."""
    from playwright.async_api import async_playwright  # a test extra: only where asked for

    options = chromium_launch_options()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(**options)
        yield launched
        await launched.close()
