"""The API reference pages render in a real browser from what the gateway serves
itself: no request leaves the machine, and the operations of every product show."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Route, sync_playwright

from tollway.testing import GatewayProcess, chromium_launch_options

PRODUCT_TITLES = (
    "Public QR code API",
    "Code generation",
    "Chat",
    "Developer",
    "Background removal",
)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    database = tmp_path_factory.mktemp("pages") / "tollway.db"
    with GatewayProcess(database_url=f"sqlite+aiosqlite:///{database}") as process:
        yield process


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    options = chromium_launch_options()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(**options)
        yield launched
        launched.close()


def _render(browser: Browser, url: str, selector: str) -> tuple[list[str], str]:
    """The requests that left the gateway's origin, and the page's text once
    ``selector`` shows."""
    origin = url.split("/schema", 1)[0]
    elsewhere: list[str] = []

    def only_the_gateway(route: Route) -> None:
        if route.request.url.startswith(origin):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    page = browser.new_page()
    try:
        page.route("**/*", only_the_gateway)
        page.goto(url)
        page.wait_for_selector(selector, timeout=60_000)
        return elsewhere, page.inner_text("body")
    finally:
        page.close()


@pytest.mark.parametrize(
    ("path", "selector"),
    [
        # Swagger UI: one block per operation.
        ("/schema", ".opblock"),
        ("/schema/swagger", ".opblock"),
        # Redoc: one menu entry per operation.
        ("/schema/redoc", "[data-item-id^='tag/']"),
    ],
)
def test_the_api_reference_renders_offline(
    gateway: GatewayProcess, browser: Browser, path: str, selector: str
) -> None:
    elsewhere, text = _render(browser, f"{gateway.url}{path}", selector)
    assert elsewhere == []
    for product in (
        "Public QR code API",
        "Code generation",
        "Chat",
        "Developer",
        "Background removal",
    ):
        assert product.lower() in text.lower(), f"{product!r} not shown on {path}"
