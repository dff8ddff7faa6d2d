"""Hosts of their own (``tollway_register_hosts``): a request for a registered host is
served under the product's prefix, the gateway's own paths excepted; registration is
checked; with no host registered the app has no layer for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import httpx
import pytest
from litestar import get
from litestar.params import PathParameter

from tollway import Gateway, Plan, Product, RegistrationError, RouteRegistrar, hookimpl
from tollway import load_settings as settings_of
from tollway.app import create_app


@get("/{name:str}", public=True, sync_to_thread=False)
def greet(name: Annotated[str, PathParameter()]) -> dict[str, str]:
    return {"hello": name}


class Greeter:
    """Product ``greeter`` at /hi, served on ``host`` too when given."""

    def __init__(self, host: str | None = None, prefix: str = "/hi") -> None:
        self.host = host
        self.prefix = prefix

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(Product("greeter", "/hi", keyed=False))

    @hookimpl
    def tollway_register_plans(self, register: Callable[[str, Plan], None]) -> None:
        register("greeter", Plan("free", requests_per_day=0))

    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        register("greeter", [greet])

    @hookimpl
    def tollway_register_hosts(self, register: Callable[[str, str], None], gateway: Any) -> None:
        if self.host is not None:
            register(self.host, self.prefix)


class Echo:
    """Registers ``host`` for /hi, a product it does not own."""

    def __init__(self, host: str) -> None:
        self.host = host

    @hookimpl
    def tollway_register_hosts(self, register: Callable[[str, str], None], gateway: Any) -> None:
        register(self.host, "/hi")


def _gateway(*plugins: tuple[str, object]) -> Gateway:
    return Gateway(settings_of(environ={}, plugins=[]), extra_plugins=plugins)


async def _get(app: Any, path: str, host: str) -> tuple[int, Any]:
    """``GET path`` for ``host`` (the routes need neither the database nor the lifespan)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        response = await client.get(path, headers={"Host": host})
    return response.status_code, response.json()


async def test_a_registered_host_is_served_under_its_prefix() -> None:
    gateway = _gateway(("greeter", Greeter("Hello.Example")))
    assert gateway.registry.hosts == {"hello.example": "/hi"}
    app = create_app(gateway)
    for host in ("hello.example", "HELLO.example:8443", "hello.example."):
        assert await _get(app, "/ada", host) == (200, {"hello": "ada"})
        assert await _get(app, "/hi/ada", host) == (200, {"hello": "ada"})  # its own path
    status, _ = await _get(app, "/ada", "other.example")
    assert status == 404
    assert await _get(app, "/hi/ada", "other.example") == (200, {"hello": "ada"})
    status, _ = await _get(app, "/healthz", "hello.example")
    assert status == 200


async def _mounted(app: Any, host: bytes) -> tuple[int, bytes]:
    """``GET /api/ada`` on an app mounted at ``/api``: the status and the raw path the
    app saw."""
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/api/ada",
        "raw_path": b"/api/ada",
        "query_string": b"",
        "root_path": "/api",
        "headers": [(b"host", host)],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def collect(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, collect)
    return sent[0]["status"], scope["raw_path"]


async def test_the_prefix_goes_after_the_root_path() -> None:
    app = create_app(_gateway(("greeter", Greeter("hello.example"))))
    assert await _mounted(app, b"hello.example") == (200, b"/api/hi/ada")
    assert await _mounted(app, b"other.example") == (404, b"/api/ada")


def test_without_hosts_there_is_no_layer() -> None:
    bare = create_app(_gateway(("greeter", Greeter())))
    hosted = create_app(_gateway(("greeter", Greeter("hello.example"))))
    assert getattr(hosted.asgi_handler, "__name__", None) == "by_host"
    assert getattr(bare.asgi_handler, "__name__", None) != "by_host"


@pytest.mark.parametrize(
    ("plugins", "error"),
    [
        ([("greeter", Greeter("hello.example:80"))], "invalid host 'hello.example:80'"),
        ([("greeter", Greeter("-bad.example"))], "invalid host '-bad.example'"),
        ([("greeter", Greeter("hello.example", "/nowhere"))], "'/nowhere', which is no product"),
        (
            [("greeter", Greeter("hello.example")), ("echo", Echo("HELLO.example"))],
            "host 'hello.example' is registered by both plugin",
        ),
    ],
)
def test_registration_is_checked(plugins: list[tuple[str, object]], error: str) -> None:
    with pytest.raises(RegistrationError, match=error.replace(".", r"\.")):
        _gateway(*plugins)
