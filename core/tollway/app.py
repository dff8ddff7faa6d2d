"""Turning a gateway into a Litestar application.

Each product's handlers are mounted on a router at the product's prefix, with the
dependencies its plugin registered. Each route's declared access was checked when it
was registered; here it is compiled into a gate, run by the route's entry
(:mod:`tollway.entry`) before Litestar handles the request, and each route gets at
most one ``before_request`` step: its body, then its idempotency key for routes
declaring ``idempotent=True`` (:mod:`tollway.idempotency`), then the check of ``null``
in its query, then the plugin's own.
Hosts registered for a product (``tollway_register_hosts``) are served by a layer in
front of the router.
"""

from __future__ import annotations

import gc
import inspect
import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, TypeVar

from litestar import Litestar, Request, Response, Router
from litestar._kwargs import KwargsModel
from litestar.connection import ASGIConnection
from litestar.di import Provide
from litestar.enums import ScopeType
from litestar.exceptions import HTTPException, MethodNotAllowedException
from litestar.handlers import BaseRouteHandler, HTTPRouteHandler
from litestar.routes import HTTPRoute
from litestar.types import AfterRequestHookHandler, ASGIApp, Empty, Receive, Scope, Send
from litestar.utils import normalize_path
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.admission.access import BearerKey, access_of
from tollway.admission.customers import Customer
from tollway.bodies import BODY_TYPE, RequestStep, check_body, json_body_type
from tollway.entry import (
    RouteEntry,
    answer_error,
    install_entries,
    observe,
    reported_headers,
)
from tollway.gateway import Gateway
from tollway.idempotency import claim_step, prepare_routes
from tollway.observability.health import Readiness, health_routes
from tollway.observability.logs import ACCESS_LOGGER, access_log_enabled
from tollway.observability.metrics import HTTP_METHODS, metrics_route
from tollway.openapi import ApiReference
from tollway.pipeline import GATE, Caller, Gate, Pipeline
from tollway.query import nullable_query_parameters, refuse_null
from tollway.registry import RegistrationError
from tollway.state import request_state

SECURITY_SCHEME = "apiKey"


T = TypeVar("T")

GATEWAY = "gateway"
"""``app.state`` key of the :class:`Gateway` an app serves."""
METRICS = "tollway.metrics"
"""Route ``opt`` key of a product route's :class:`~tollway.observability.metrics.RouteMetrics`."""


def service_of(connection: ASGIConnection[Any, Any, Any, Any], kind: type[T]) -> T:
    """The serving gateway's one instance of the service class ``kind``, without a
    dependency. For the busiest routes only: Litestar's dependency path (resolving,
    a cleanup group entered on an exit stack, the value checked into the handler's
    arguments) cost 4 µs of a redirect's 34 on the request path."""
    gateway: Gateway = connection.app.state[GATEWAY]
    return gateway.service(kind)


def freeze_garbage() -> None:
    """Collect, then set every object alive now aside from the garbage collector
    (``gc.freeze``): once a process has started, that is the gateway itself (plugins,
    routes, rule sets, compiled statements), which lives as long as the process. A full
    collection walks every tracked object; a started gateway's are hundreds of
    thousands, and its full collections paused the event loop for about 73 ms every
    couple of seconds under load (7.4 ms once frozen; docs/benchmarks.md)."""
    gc.collect()
    gc.freeze()


def create_app(gateway: Gateway, *, server: bool = False) -> Litestar:
    """The ASGI app serving every registered product through the gateway pipeline,
    plus the operators' routes (``/healthz``, ``/readyz``, ``/metrics``).

    ``server``: the app is a server process's one app (``tollway.asgi``, ``tollway
    serve``): it calls :func:`freeze_garbage` once started. Not for an app among many in
    one process (tests), whose gateways must stay collectable once dropped."""
    registry = gateway.registry
    routers = [
        Router(
            path=registry.products[route_set.product].prefix,
            route_handlers=list(route_set.handlers),
            opt={"product": route_set.product, "plugin": route_set.plugin},
            dependencies={
                name: _provider(gateway, provided)
                for name, provided in route_set.dependencies.items()
            },
        )
        for route_set in registry.routes
    ]
    database = gateway.database
    prepare_routes(routers, database)

    async def provide_transaction() -> AsyncIterator[AsyncSession]:
        # Committed after the handler's response is made, before it is sent: a commit
        # that fails is answered as an error, never as a success that did not happen.
        async with database.transaction() as session:
            yield session

    readiness = Readiness.for_gateway(gateway)
    errors = _ErrorAnswers(gateway)
    app = Litestar(
        route_handlers=[*routers, *health_routes(readiness), metrics_route(gateway)],
        # For the exception layer Litestar puts inside a route with middleware (the
        # idempotent ones): its answer goes out through the entry's stamping send.
        exception_handlers={Exception: errors.answer},
        dependencies={
            "caller": Provide(_provide_caller, sync_to_thread=False),
            "customer": Provide(_provide_customer, sync_to_thread=False),
            "gateway": Provide(lambda: gateway, sync_to_thread=False, use_cache=True),
            "transaction": Provide(provide_transaction),
            "reads": Provide(lambda: database.reads, sync_to_thread=False, use_cache=True),
        },
        on_startup=[gateway.start, *([freeze_garbage] if server else [])],
        on_shutdown=[gateway.stop, readiness.close],
        # Serves the products' contracts; app.openapi_schema stays the generated one.
        openapi_config=ApiReference(gateway).openapi_config(),
        debug=gateway.settings.debug,
        # JSON logs are set up by tollway.observability.logs; Litestar's own logging
        # set-up would replace the root handler writing them.
        logging_config=None if gateway.settings.log_format == "json" else Empty,
    )
    app.state[GATEWAY] = gateway
    _compile_routes(app, gateway)
    _install_entries(app, errors)
    _answer_errors(app, errors)
    _serve_hosts(app, registry.hosts)
    return app


def _serve_hosts(app: Litestar, hosts: Mapping[str, str]) -> None:
    """Serve the requests for each registered host under its prefix: ``/abc`` on
    ``go.example.com`` as ``/l/abc``. A path whose first segment one of the app's own
    routes has (``/v1``, ``/healthz``, ``/l``) is left alone, so a host may be the
    API's own too. The ``Host`` header decides, in any case, its port ignored.

    A layer in front of Litestar's router (``app.asgi_handler``): middleware runs after
    routing, too late to move a request. Without registered hosts there is no layer."""
    if not hosts:
        return
    prefixes = {host.encode(): (prefix, prefix.encode()) for host, prefix in hosts.items()}
    own = frozenset(route.path.split("/")[1] for route in app.routes)
    routed = app.asgi_handler

    async def by_host(scope: Scope, receive: Receive, send: Send) -> None:
        for name, value in scope["headers"]:
            if name == b"host":
                found = prefixes.get(value.partition(b":")[0].lower().removesuffix(b"."))
                if found is not None:
                    _move(scope, *found, own)
                break
        await routed(scope, receive, send)

    app.asgi_handler = by_host


def _move(scope: Scope, prefix: str, raw_prefix: bytes, own: frozenset[str]) -> None:
    """Put ``prefix`` in front of the request's path (after its ``root_path``), unless
    the path's first segment is one the app serves itself."""
    root: str = scope.get("root_path") or ""
    path = scope["path"]
    if not path.startswith(root):
        root = ""
    rest = path[len(root) :]
    if rest[1:].partition("/")[0] in own:
        return
    scope["path"] = f"{root}{prefix}{rest}"
    raw = scope.get("raw_path")
    if raw is not None:
        at = len(root.encode())
        scope["raw_path"] = raw[:at] + raw_prefix + raw[at:]


def _provider(gateway: Gateway, provided: Any) -> Provide:
    """A Litestar provider for what a plugin registered as a dependency: a service
    class (the gateway's instance of it), a ``Provide``, or a provider function."""
    if isinstance(provided, Provide):
        return provided
    if isinstance(provided, type):
        service: object = gateway.service(provided)
        return Provide(lambda: service, sync_to_thread=False, use_cache=True)
    if inspect.iscoroutinefunction(provided) or inspect.isasyncgenfunction(provided):
        return Provide(provided)
    return Provide(provided, sync_to_thread=False)


def _provide_caller(request: Request[Any, Any, Any]) -> Caller:
    caller = request_state(request.scope).caller
    if caller is None:
        raise LookupError(f"{request.url.path}: only keyed routes have a caller")
    return caller


def _provide_customer(request: Request[Any, Any, Any]) -> Customer:
    customer = request_state(request.scope).customer
    if customer is None:
        raise LookupError(f"{request.url.path}: declare Access(customer=True) to get a customer")
    return customer


def _compile_routes(app: Litestar, gateway: Gateway) -> None:
    """Give each product route its gate, metrics and one ``before_request`` step.
    (Done on the handlers Litestar built: it copies every handler per router.)"""
    pipeline = Pipeline.for_gateway(gateway)
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            _refuse_keyed(route, gateway)
            continue
        _resolve_in_turn(route)
        handlers = [h for h in route.route_handlers if h.opt.get("product") is not None]
        automatic = [h for h in handlers if _is_preflight(h)]
        kwargs = {id(handler): model for handler, model in route.route_handler_map.values()}
        for handler in handlers:
            if handler not in automatic:
                _compile(handler, kwargs[id(handler)], route.path_format, pipeline, gateway)
        reports = (h.opt[GATE].report for h in handlers if GATE in h.opt)
        report = next((found for found in reports if found is not None), None)
        for handler in automatic:
            product = gateway.registry.products[handler.opt["product"]]
            access = access_of({"public": True}, product)
            assert access is not None
            handler.opt[GATE] = Gate(product, access, None, None, report)
            handler.opt[METRICS] = gateway.metrics.route(product.name, route.path_format)
            # Litestar declares this attribute with a narrower type than it accepts.
            handler.after_request = _allow_header(route.methods)  # type: ignore[assignment]


def _resolve_in_turn(route: HTTPRoute) -> None:
    """Resolve each handler's dependencies one after another. Litestar starts an anyio
    task group for every set of dependencies that do not need each other (``caller``
    and ``reads`` under a product's reads, say), which cost about a tenth of a
    database-backed list's CPU. The kit's providers only read request state or open
    one transaction, so running them concurrently gains nothing; the order within a
    set is any, as Litestar's is."""
    for _, kwargs_model in route.route_handler_map.values():
        kwargs_model.dependency_batches = [
            {dependency} for batch in kwargs_model.dependency_batches for dependency in batch
        ]


def _refuse_keyed(route: Any, gateway: Gateway) -> None:
    for handler in getattr(route, "route_handlers", ()):
        if (name := handler.opt.get("product")) is None:
            continue
        access = access_of(handler.opt, gateway.registry.products[name])
        if access is None or not access.public:
            raise RegistrationError(
                f"plugin {handler.opt.get('plugin')!r}, route {route.path}: keyed routes "
                "must be HTTP routes"
            )


def _is_preflight(handler: HTTPRouteHandler) -> bool:
    """Litestar's automatic ``OPTIONS`` answer (preflight needs no key)."""
    return handler.http_methods == {"OPTIONS"} and not {"scope", "access", "admin"} & set(
        handler.opt
    )


def _compile(
    handler: HTTPRouteHandler,
    kwargs: KwargsModel,
    path: str,
    pipeline: Pipeline,
    gateway: Gateway,
) -> None:
    product = gateway.registry.products[handler.opt["product"]]
    access = access_of(handler.opt, product)
    assert access is not None  # checked when the route was registered
    handler.opt[GATE] = pipeline.gate(product, access)
    if not access.public and access.anonymous is None and isinstance(access.key, BearerKey):
        # The document's security scheme is the bearer header; keys sent elsewhere, or
        # optional ones, are described by the route's own parameters.
        handler.security = [{SECURITY_SCHEME: []}]
    handler.opt[METRICS] = gateway.metrics.route(product.name, path)
    steps: list[RequestStep] = []
    if (body_type := json_body_type(handler)) is not None:
        handler.opt[BODY_TYPE] = body_type
        steps.append(check_body)
    if (claim := claim_step(handler, access, path, gateway)) is not None:
        steps.append(claim)
    if nullable := nullable_query_parameters(handler, kwargs):
        steps.append(refuse_null(nullable))
    layers = [layer.before_request for layer in handler.ownership_layers]
    own = next((step for step in reversed(layers) if step), None)
    if own is not None:
        steps.append(own)
    handler.before_request = _chain(steps) if steps else None


def _allow_header(methods: Iterable[str]) -> AfterRequestHookHandler:
    """Litestar 2's automatic OPTIONS answer lists only one of a path's methods
    (litestar#4169, fixed in 3.0); this sets the full ``Allow`` list."""
    allow = ", ".join(sorted(methods))

    async def set_allow(response: Response[Any]) -> Response[Any]:
        response.headers["Allow"] = allow
        return response

    return set_allow


def _chain(steps: list[RequestStep]) -> RequestStep:
    """One ``before_request`` hook: ``steps`` in order until one answers."""
    if len(steps) == 1:
        return steps[0]
    ordered = tuple(steps)

    async def run_steps(request: Request[Any, Any, Any]) -> Any:
        for step in ordered:
            answer = await step(request)
            if answer is not None:
                return answer
        return None

    return run_steps


def _handler_of_path(scope: Scope, refusal: MethodNotAllowedException) -> BaseRouteHandler | None:
    """A handler of the path a 405 answers, found by one of the methods its ``Allow``
    header lists: Litestar's router chose none, yet the path's product and rate limit
    report are the route's."""
    method = (refusal.headers or {}).get("allow", "").split(",")[0].strip()
    if not method:
        return None
    path = scope["path"]
    if root_path := scope.get("root_path"):
        path = path.split(root_path, maxsplit=1)[-1]  # as Litestar's router does
    app: Litestar = scope["litestar_app"]
    try:
        _, handler, *_ = app.asgi_router.handle_routing(normalize_path(path), method)
    except HTTPException:
        return None
    return handler


class _ErrorAnswers:
    """The gateway's answer to an error: the error mapper's response (:meth:`answer`).
    Route entries send it through their stamping ``send``; for requests no entry saw
    (no route matched, a 405) the layer in front of the router stamps and records it
    (:meth:`stamped`), after :meth:`prepare` made what needs waiting for."""

    def __init__(self, gateway: Gateway) -> None:
        self.registry = gateway.registry
        self.mapper = gateway.error_mapper
        self.metrics = gateway.metrics
        self.access = (
            logging.getLogger(ACCESS_LOGGER) if access_log_enabled(gateway.settings) else None
        )

    def answer(self, request: Request[Any, Any, Any], error: Exception) -> Response[Any]:
        scope = request.scope
        state = request_state(scope)  # a request matching no route starts here
        handler = scope.get("route_handler")
        if handler is None and isinstance(error, MethodNotAllowedException):
            handler = _handler_of_path(scope, error)
        gate = handler.opt.get(GATE) if handler is not None else None
        registry = self.registry
        product = gate.product if gate is not None else registry.product_for_path(scope["path"])
        return self.mapper.to_response(error, product, request_id=state.request_id, handler=handler)

    async def prepare(self, error: Exception, scope: Scope) -> None:
        """A 405 under a product route reports that route's rate limit window, which
        may mean asking the limiter."""
        if scope.get("route_handler") is not None or not isinstance(
            error, MethodNotAllowedException
        ):
            return
        handler = _handler_of_path(scope, error)
        gate = handler.opt.get(GATE) if handler is not None else None
        if gate is not None and gate.report is not None:
            await reported_headers(scope, gate.report)

    def stamped(self, request: Request[Any, Any, Any], error: Exception) -> Response[Any]:
        response = self.answer(request, error)
        scope = request.scope
        state = request_state(scope)
        response.headers["X-Request-ID"] = state.request_id
        for name, value in state.headers or ():
            response.headers[name.decode("latin-1")] = value.decode("latin-1")
        if scope.get("route_handler") is None:
            product = self.registry.product_for_path(scope["path"])
            method = scope["method"]
            observe(
                scope,
                method if method in HTTP_METHODS else "OTHER",
                response.status_code or 500,
                state,
                self.metrics.unmatched(product.name if product is not None else ""),
                self.access,
            )
        return response


def _answer_errors(app: Litestar, errors: _ErrorAnswers) -> None:
    """Answer the errors no route entry answers (no route matched, a 405) in front of
    Litestar's router, in place of Litestar's exception layer there. That layer wraps
    ``send`` for every request to learn whether a response started, which each entry
    records in the request's state already: the same answers, 0.9 µs less per request.
    The app is built without CORS or telemetry layers around the router; start-up
    fails if Litestar put any there, rather than answer errors unstamped."""
    layer = app.asgi_handler
    router = app.asgi_router
    if getattr(layer, "app", None) is not router:
        raise RuntimeError(
            "Litestar's exception layer does not wrap the router directly: "
            "tollway.app cannot answer unrouted requests in its place"
        )

    async def answering(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await layer(scope, receive, send)
            return
        try:
            await router(scope, receive, send)
        except Exception as error:
            if request_state(scope).responded:
                raise  # the server ends the response; nothing can be answered now
            await errors.prepare(error, scope)
            await answer_error(scope, receive, send, error, errors.stamped)

    app.asgi_handler = answering


def _install_entries(app: Litestar, errors: _ErrorAnswers) -> None:
    """Give every HTTP route handler its entry (:mod:`tollway.entry`): a product's
    admits and counts, an operator's route only starts the request and checks its
    query string."""
    access = errors.access
    expected = sum(
        len(handler.http_methods)
        for route in app.routes
        if isinstance(route, HTTPRoute)
        for handler in route.route_handlers
    )

    def entry_for(asgi_app: ASGIApp, handler: Any) -> ASGIApp | None:
        if not isinstance(handler, HTTPRouteHandler):
            return None
        gate: Gate | None = handler.opt.get(GATE)
        return RouteEntry(
            asgi_app,
            admit=gate.admit if gate is not None else None,
            express=gate.express if gate is not None else None,
            report=gate.report if gate is not None else None,
            route=handler.opt.get(METRICS),
            errors=errors.answer,
            access=access,
        )

    installed = install_entries(app, entry_for)
    if installed != expected:
        # Fail closed: a product route without its entry would serve unadmitted.
        raise RuntimeError(
            f"{installed} of {expected} route handlers got their entry: "
            "Litestar's routing table is not what tollway.entry expects"
        )
