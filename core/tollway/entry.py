"""Where a request enters the gateway, and how its response leaves.

Litestar's router finds a request's route handler, then calls the handler's
:class:`RouteEntry`, which :func:`install_entries` put in the router's table in front
of Litestar's handling of the request. The entry

1. starts the request (:func:`tollway.state.request_state`: its id and clock),
2. checks the query string, when there is one (:func:`tollway.query.check_query_string`),
3. runs the route's admission (:class:`tollway.pipeline.Gate`), before Litestar makes
   a ``Request`` or reads the body,
4. hands Litestar a ``send`` that stamps the response's headers (request id, rate
   limit) and records its metrics and access log line (:func:`stamping`),
5. answers an error raised on the way through the gateway's error handler and that
   same ``send``.

Every HTTP route has one: a product's admits and counts; an operator's route (probes,
metrics, the API reference) only starts the request, checks its query string and
stamps the request id. Requests no entry sees, because no route matched (404, 405),
are answered in front of the router by the app's error handler, which stamps and
counts what it answers itself (:mod:`tollway.app`).

Why not Litestar's hooks: a ``before_send`` hook wraps ``send`` for every response of
the app and costs a hook call per message, and a ``before_request`` step runs after
Litestar made the handler's ``Request``. An entry does the same work once per request
with nothing around it: with it, the trivial keyed route's cost above bare Litestar
fell from 11.3 to 8.5 µs in process (``python bench/micro.py``, with the plain-call
admission of :mod:`tollway.pipeline`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from time import perf_counter
from typing import TYPE_CHECKING, Any

from litestar import Request, Response
from litestar._asgi.routing_trie.types import ASGIHandlerTuple, RouteTrieNode
from litestar.types import ASGIApp, HTTPResponseStartEvent, Message, Receive, Scope, Send

from tollway.pipeline import Admit, Express, Reporter
from tollway.query import check_query_string
from tollway.state import RequestState, request_state

if TYPE_CHECKING:
    from litestar import Litestar

    from tollway.observability.metrics import RouteMetrics

log = logging.getLogger("tollway.entry")

ErrorHandler = Callable[[Request[Any, Any, Any], Exception], Response[Any]]


class RouteEntry:
    """One route handler's way in: see the module's docstring."""

    __slots__ = ("_access", "_admit", "_app", "_errors", "_express", "_report", "_route")

    def __init__(
        self,
        app: ASGIApp,
        *,
        admit: Admit | None,
        express: Express | None,
        report: Reporter | None,
        route: RouteMetrics | None,
        errors: ErrorHandler,
        access: logging.Logger | None,
    ) -> None:
        self._app = app
        self._admit = admit
        self._express = express
        self._report = report
        self._route = route
        self._errors = errors
        self._access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = request_state(scope)
        send = stamping(send, scope, state, self._route, self._report, self._access)
        try:
            if scope["query_string"]:
                check_query_string(scope)
            admit = self._admit
            if admit is not None:
                express = self._express
                if express is None or not express(state):
                    await admit(scope, receive, state)
            await self._app(scope, receive, send)
        except Exception as error:
            if state.responded:
                raise
            await answer_error(scope, receive, send, error, self._errors)


async def answer_error(
    scope: Scope, receive: Receive, send: Send, error: Exception, errors: ErrorHandler
) -> None:
    """Answer ``error`` as the app's exception handler would, through ``send``."""
    request: Request[Any, Any, Any] = Request(scope, receive, send)
    response = errors(request, error)
    await response.to_asgi_response(app=None, request=request)(scope, receive, send)


def stamping(
    send: Send,
    scope: Scope,
    state: RequestState,
    route: RouteMetrics | None,
    report: Reporter | None,
    access: logging.Logger | None,
) -> Send:
    """``send`` stamping the response's start: its request id, the rate limit headers
    admission left (or ``report`` puts there, for answers admission never reached),
    and, for a ``route`` counted, its metrics and access log line."""

    # A plain function handing back ``send``'s own awaitable: no coroutine of its own
    # per message, but for the rare start that has to await its report first.
    def stamped(message: Message) -> Awaitable[None]:
        if message["type"] == "http.response.start":
            extra = state.headers
            if extra is None and report is not None:
                return _reported_then_sent(message, send, scope, state, route, report, access)
            _stamp(message, extra, scope, state, route, access)
        return send(message)

    return stamped


async def _reported_then_sent(
    message: HTTPResponseStartEvent,
    send: Send,
    scope: Scope,
    state: RequestState,
    route: RouteMetrics | None,
    report: Reporter,
    access: logging.Logger | None,
) -> None:
    _stamp(message, await reported_headers(scope, report), scope, state, route, access)
    await send(message)


def _stamp(
    message: HTTPResponseStartEvent,
    extra: list[tuple[bytes, bytes]] | None,
    scope: Scope,
    state: RequestState,
    route: RouteMetrics | None,
    access: logging.Logger | None,
) -> None:
    state.responded = True
    headers: Any = message.get("headers")
    if type(headers) is not list:
        # Litestar hands over a fresh list per response; anything else is copied.
        headers = message["headers"] = list(headers or ())
    headers.append((b"x-request-id", state.request_id.encode()))
    if extra:
        headers.extend(extra)
    if route is not None:
        method: str = scope["method"]  # type: ignore[typeddict-item]  # HTTP only
        if access is None:
            route.record(method, message["status"], perf_counter() - state.started)
        else:
            observe(scope, method, message["status"], state, route, access)


async def reported_headers(scope: Scope, report: Reporter) -> list[tuple[bytes, bytes]]:
    """The rate limit headers ``report`` leaves in the request's state; none when it
    cannot make them."""
    try:
        await report(scope)
    except Exception:
        # The answer is decided and about to go out: a report that cannot be made (its
        # limiter or database unreachable) leaves the headers out, never the answer.
        log.warning("rate limit report failed for %s", scope["path"], exc_info=True)
        return []
    return request_state(scope).headers or []


def observe(
    scope: Scope,
    method: str,
    status: int,
    state: RequestState,
    route: RouteMetrics,
    access: logging.Logger | None,
) -> None:
    """Count a response of ``route`` and, when the access log is on, log it."""
    seconds = perf_counter() - state.started
    route.record(method, status, seconds)
    if access is not None:
        path = scope["path"]
        access.info(
            "%s %s %d",
            method,
            path,
            status,
            extra={
                "method": method,
                "path": path,
                "status": status,
                "duration_ms": round(seconds * 1000, 3),
                "request_id": state.request_id,
                "product": route.product or None,
            },
        )


def install_entries(app: Litestar, entry_for: Callable[[ASGIApp, Any], ASGIApp | None]) -> int:
    """Put ``entry_for(asgi_app, handler)`` in the router's table in place of each
    route handler's ASGI app, where it gives one; return how many were put.

    Litestar has no public way to run code between routing and its handling of a
    request without wrapping ``send`` again (route middleware comes with an exception
    layer of its own), so this reaches into its routing table, built when the app was.
    The caller checks the count: a route without its entry would go unadmitted."""
    installed = 0
    for node in _nodes(app.asgi_router.root_route_map_node):
        for method, (asgi_app, handler) in list(node.asgi_handlers.items()):
            entry = entry_for(asgi_app, handler)
            if entry is not None:
                node.asgi_handlers[method] = ASGIHandlerTuple(asgi_app=entry, handler=handler)
                installed += 1
    # Routing answers are cached per path; none may keep an app from before.
    app.asgi_router.handle_routing.cache_clear()
    return installed


def _nodes(node: RouteTrieNode) -> Iterator[RouteTrieNode]:
    yield node
    for child in node.children.values():
        yield from _nodes(child)
