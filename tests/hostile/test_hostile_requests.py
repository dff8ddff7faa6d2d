"""Hostile requests to every route of every installed plugin: always a 4xx in the
product's error style, never a 5xx or an error in the log.

Routes are read from the app itself, so a product installed later is covered without
touching this file. Requests go through the ASGI interface directly: HTTP clients
refuse to send the raw non-ASCII query strings that real clients do send.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from litestar import Litestar
from litestar.enums import RequestEncodingType
from litestar.handlers import HTTPRouteHandler
from litestar.params import BodyKwarg

from tollway import Gateway, load_settings
from tollway.admission.access import BearerKey
from tollway.app import create_app
from tollway.pipeline import GATE, Gate
from tollway.testing import (
    GatewayFactory,
    RawAnswer,
    Tenant,
    product_test_settings,
    raw_request,
    tenant,
)

UNLIMITED = 10**9

HOSTILE_BODIES = {
    "invalid UTF-8 in a string": b'{"data":"\xff"}',
    "invalid UTF-8 in a key": b'{"\xff":1}',
    "a surrogate encoded in UTF-8": b'{"data":"\xed\xa0\x80"}',
    "an overlong encoding": b'{"data":"\xc0\xaf"}',
    "an escaped lone surrogate": b'{"data":"\\ud800"}',
    "an escaped lone low surrogate": b'{"data":"\\udc00 "}',
    "500 levels of nesting in a value": b'{"data":' + b"[" * 500 + b"]" * 500 + b"}",
    "500 levels of nesting after a whole float": (
        b'{"size":300.0,"data":' + b"[" * 500 + b"]" * 500 + b"}"
    ),
    "100,000 levels of nesting": b"[" * 100_000 + b"]" * 100_000,
    "100,000 levels of objects": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "an integer of 5,000 digits": b'{"data":' + b"9" * 5000 + b"}",
    "an integer over 64 bits": b'{"data":' + str(2**64).encode() + b"}",
    "a float out of range": b'{"data":1e400}',
    "NaN": b'{"data":NaN}',
    "duplicate keys": b'{"name":"a","name":"b"}',
    "an empty body": b"",
    "a byte-order mark": b'\xef\xbb\xbf{"data":"x"}',
    "UTF-16": '{"data":"x"}'.encode("utf-16"),
    "truncated": b'{"data":"x',
    "trailing bytes": b'{"data":"x"}\xff',
}
"""Each is answered 400 on a JSON route, whatever its schema."""

OTHER_MEDIA_TYPES = [
    b"text/plain",
    b"text/plain;charset=UTF-8",
    b"application/x-www-form-urlencoded",
    b"multipart/form-data; boundary=x",
    b"application/jsonx",
    b"text/json",
    b"\xff",
    b"",
]
"""``Content-Type`` values refused (415) on a JSON route, even around a JSON body."""

JSON_MEDIA_TYPES = [b"application/json", b"Application/JSON; charset=utf-8", b"application/x+json"]

HOSTILE_QUERIES = {
    "a raw invalid byte": b"q=\xff",
    "an escaped invalid byte": b"q=%FF",
    "an escaped surrogate": b"q=%ED%A0%80",
    "a raw surrogate": b"q=\xed\xa0\x80",
    "an escaped overlong slash": b"q=%C0%AF",
    "a sequence cut by a separator": b"q=%E3%80&r=%82",
    "a truncated raw sequence": b"data=\xe3\x80",
    "a lone continuation byte": b"q=a\x80",
}
"""Each is answered 400 on every route, before anything else looks at the request."""


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    """With every path parameter filled with ``1``."""
    gate: Gate
    json_body: bool
    own_admission: bool
    """The product admits requests its own way (a composed ``Access``: its key
    elsewhere than the Authorization header, or its own check), before the body."""

    @property
    def style(self) -> str:
        return self.gate.product.error_style

    @property
    def admitted_by_our_key(self) -> bool:
        """Whether the test's key gets the request past every check before the body
        (elsewhere a 4xx of the product's own checks may come first)."""
        return not self.gate.public and not self.own_admission

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def _takes_json_body(handler: HTTPRouteHandler) -> bool:
    field = handler.parsed_fn_signature.parameters.get("data")
    if field is None:
        return False
    kwarg = field.kwarg_definition
    return not isinstance(kwarg, BodyKwarg) or kwarg.media_type == RequestEncodingType.JSON


def product_routes(app: Litestar) -> Iterator[Route]:
    """Every method of every route a plugin registered (not the operators' routes)."""
    for route in app.routes:
        path = re.sub(r"\{[^}]+\}", "1", route.path_format)
        for handler in getattr(route, "route_handlers", ()):
            gate = handler.opt.get(GATE)
            if gate is None or not isinstance(handler, HTTPRouteHandler):
                continue
            for method in sorted(handler.http_methods):
                access = gate.access
                own = not isinstance(access.key, BearerKey) or access.check is not None
                yield Route(method, path, gate, _takes_json_body(handler), own)


def _lifted_limits(gateway_plans: dict[str, Any]) -> dict[str, Any]:
    """Config lifting every plan's limits: hundreds of requests come from one key and
    one address, and limits are tested elsewhere."""
    return {
        product: {
            "plans": {
                name: {
                    "requests_per_day": UNLIMITED,
                    "limits": dict.fromkeys(plan.limits, UNLIMITED),
                }
                for name, plan in plans.items()
            }
        }
        for product, plans in gateway_plans.items()
    }


@dataclass
class Client:
    """Sends requests to an app with the test's admin key."""

    app: Litestar
    admin: Tenant

    async def send(self, route: Route, **request: Any) -> RawAnswer:
        headers = [(b"authorization", f"Bearer {self.admin.key}".encode())]
        headers += request.pop("headers", [])
        return await raw_request(self.app, route.method, route.path, headers=headers, **request)


@dataclass
class Setup:
    gateway: Gateway
    admin: Tenant

    @asynccontextmanager
    async def client(self) -> AsyncIterator[Client]:
        """The gateway's app, its lifespan run around."""
        app = create_app(self.gateway)
        async with app.lifespan():
            yield Client(app, self.admin)


@pytest.fixture
async def setup(
    gateway_factory: GatewayFactory,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Setup:
    """Every installed plugin, limits lifted, and an admin key of an account on every
    product's richest plan holding every scope."""
    products = _lifted_limits(Gateway(load_settings(environ={})).plans)
    for product, config in products.items():
        config["settings"] = product_test_settings(request.config, product, tmp_path_factory)
    gateway = await gateway_factory(products=products)
    richest = {
        product: max(plans.values(), key=lambda plan: plan.rank).name
        for product, plans in gateway.plans.items()
    }
    admin = await tenant(
        gateway, "hostile", plans=richest, scopes=gateway.registry.scopes, admin=True
    )
    return Setup(gateway, admin)


def assert_refused(answer: RawAnswer, route: Route, expected: int | None, what: str) -> None:
    """``expected`` status (any 4xx but 429 when ``None``), in the route's error style."""
    where = f"{route} with {what}: {answer.status} {answer.body[:300]!r}"
    if expected is None:
        assert 400 <= answer.status < 500, where
        assert answer.status != 429, where
    else:
        assert answer.status == expected, where
    body = answer.json()
    other = "detail" if route.style == "error" else "error"
    assert isinstance(body.get(route.style), str), where
    assert other not in body, where


def assert_nothing_logged_as_error(caplog: pytest.LogCaptureFixture) -> None:
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert errors == [], [record.getMessage() for record in errors]


async def test_routes_of_every_product_are_found(setup: Setup) -> None:
    """The tests below see every product with routes, and JSON routes among them (else
    they would pass by testing nothing)."""
    async with setup.client() as client:
        routes = list(product_routes(client.app))
    registered = {route_set.product for route_set in setup.gateway.registry.routes}
    assert {route.gate.product.name for route in routes} == registered
    assert any(route.json_body for route in routes)


async def test_hostile_bodies_answer_400_on_every_json_route(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    json_type = [(b"content-type", b"application/json")]
    async with setup.client() as client:
        for route in product_routes(client.app):
            if not route.json_body:
                continue
            expected = 400 if route.admitted_by_our_key else None
            for what, body in HOSTILE_BODIES.items():
                answer = await client.send(route, body=body, headers=json_type)
                assert_refused(answer, route, expected, what)
                # Without a Content-Type the body is read as JSON all the same.
                answer = await client.send(route, body=body)
                assert_refused(answer, route, expected, f"{what}, no Content-Type")
    assert_nothing_logged_as_error(caplog)


async def test_other_media_types_answer_415_on_every_json_route(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    async with setup.client() as client:
        for route in product_routes(client.app):
            if not route.json_body:
                continue
            admitted = route.admitted_by_our_key
            for media_type in OTHER_MEDIA_TYPES:
                headers = [(b"content-type", media_type)]
                answer = await client.send(route, body=b"{}", headers=headers)
                assert_refused(answer, route, 415 if admitted else None, f"{media_type!r}")
            for media_type in JSON_MEDIA_TYPES:
                # Read as JSON: the repeated key inside is what is refused.
                headers = [(b"content-type", media_type)]
                answer = await client.send(route, body=b'{"a":1,"a":1}', headers=headers)
                assert_refused(answer, route, 400 if admitted else None, f"{media_type!r}")
    assert_nothing_logged_as_error(caplog)


async def test_hostile_query_strings_answer_400_on_every_route(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    async with setup.client() as client:
        for route in product_routes(client.app):
            body = b"{}" if route.json_body else b""
            for what, query in HOSTILE_QUERIES.items():
                # Refused before admission too, like a malformed request line.
                answer = await client.send(route, query=query, body=body)
                assert_refused(answer, route, 400, what)
    assert_nothing_logged_as_error(caplog)


ISSUE_REQUESTS = [
    ("/api/qr/json", b'{"data":"\xff"}'),
    ("/api/qr/json", b'{"data":' + b"[" * 500 + b"]" * 500 + b"}"),
    ("/v1/chat/contacts", b'{"name":"\xff"}'),
    ("/v1/removebg/process", b'{"image_url":"\xff"}'),
    ("/v1/developer/api-keys", b'{"name":"\xff"}'),
    ("/v1/chat/stream/messages", b'{"content":"\xff"}'),
]


@pytest.mark.parametrize(("path", "body"), ISSUE_REQUESTS)
async def test_the_issue_requests_answer_400(
    setup: Setup, caplog: pytest.LogCaptureFixture, path: str, body: bytes
) -> None:
    """The requests of the issue report, as sent there."""
    json_type = [(b"content-type", b"application/json")]
    async with setup.client() as client:
        [route] = [r for r in product_routes(client.app) if (r.method, r.path) == ("POST", path)]
        answer = await client.send(route, body=body, headers=json_type)
    assert_refused(answer, route, 400, "the issue's body")
    assert_nothing_logged_as_error(caplog)
