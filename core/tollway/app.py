"""Turning a gateway into a Litestar application."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from litestar import Litestar, Request, Response, Router
from litestar.di import Provide
from litestar.exceptions import HTTPException, MethodNotAllowedException, ValidationException
from litestar.handlers import BaseRouteHandler, HTTPRouteHandler
from litestar.params import ParameterKwarg
from litestar.types import AfterRequestHookHandler, Empty, Scope
from litestar.utils import normalize_path

from tollway.bodies import RequestStep, strict_body_step
from tollway.db.database import unavailable as database_unavailable
from tollway.errors import ApiError
from tollway.gateway import Gateway
from tollway.observability.health import Readiness, health_routes
from tollway.observability.metrics import metrics_route
from tollway.observability.responses import OBSERVED, response_observer
from tollway.openapi import ApiReference
from tollway.pipeline import (
    GATE,
    PATH_REPORT,
    REPORT,
    Caller,
    Gate,
    Pipeline,
    admission_step,
    current_caller,
    request_id,
    stamp_response_headers,
    start_request,
)
from tollway.query import utf8_query_strings
from tollway.registry import RegistrationError

log = logging.getLogger("tollway")

SECURITY_SCHEME = "apiKey"


def create_app(gateway: Gateway) -> Litestar:
    """The ASGI app serving every registered product through the gateway pipeline,
    plus the operators' routes (``/healthz``, ``/readyz``, ``/metrics``)."""
    registry = gateway.registry
    routers = [
        Router(
            path=registry.products[route_set.product].prefix,
            route_handlers=list(route_set.handlers),
            opt={"product": route_set.product, "plugin": route_set.plugin},
        )
        for route_set in registry.routes
    ]

    def provide_caller(request: Request[Any, Any, Any]) -> Caller:
        return current_caller(request.scope)

    readiness = Readiness.for_gateway(gateway)
    app = Litestar(
        route_handlers=[*routers, *health_routes(readiness), metrics_route(gateway)],
        before_send=[stamp_response_headers, response_observer(gateway)],
        middleware=[utf8_query_strings],
        exception_handlers={Exception: _error_handler(gateway)},
        dependencies={
            "caller": Provide(provide_caller, sync_to_thread=False),
            "gateway": Provide(lambda: gateway, sync_to_thread=False, use_cache=True),
        },
        on_startup=[gateway.start],
        on_shutdown=[gateway.stop, readiness.close],
        # Serves the products' contracts; app.openapi_schema stays the generated one.
        openapi_config=ApiReference(gateway).openapi_config(),
        debug=gateway.settings.debug,
        # JSON logs are set up by tollway.observability.logs; Litestar's own logging
        # set-up would replace the root handler writing them.
        logging_config=None if gateway.settings.log_format == "json" else Empty,
    )
    app.state["gateway"] = gateway
    _attach_gates(app, gateway)
    return app


def _attach_gates(app: Litestar, gateway: Gateway) -> None:
    """Compute each route's gate and metrics once, failing start-up on an unguarded
    keyed route."""
    pipeline = Pipeline.for_gateway(gateway)
    metrics = gateway.metrics
    registry = gateway.registry
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            opt = handler.opt
            product_name = opt.get("product")
            if product_name is None:
                continue
            product = registry.products[product_name]
            # Litestar adds an OPTIONS handler to every path; preflight needs no key.
            preflight = handler.http_methods == {"OPTIONS"} and "scope" not in opt
            if preflight and isinstance(handler, HTTPRouteHandler):
                # Litestar declares this attribute with a narrower type than it accepts.
                handler.after_request = _allow_header(route.methods)  # type: ignore[assignment]
            public = bool(opt.get("public")) or not product.keyed or preflight
            scope = opt.get("scope")
            admin = bool(opt.get("admin"))
            where = f"plugin {opt.get('plugin')!r}, route {route.path}"
            if not public and scope is None and not admin:
                raise RegistrationError(f"{where}: declare scope=..., admin=True or public=True")
            if scope is not None and scope not in registry.scopes:
                raise RegistrationError(f"{where}: scope {scope!r} is not registered")
            if not public:
                handler.security = [{SECURITY_SCHEME: []}]
            gate = Gate(product, pipeline, scope=scope, admin=admin, public=public)
            opt[GATE] = gate
            if not isinstance(handler, HTTPRouteHandler):
                if not public:
                    raise RegistrationError(f"{where}: keyed routes must be HTTP routes")
                continue
            opt[OBSERVED] = metrics.route(product.name, route.path_format)
            steps = [admission_step(gate)] if not public else []
            # A product admitting requests its own way (the keyless public QR API
            # limits by client address) runs its step first too, before the body.
            if (own_admission := opt.get("admit")) is not None:
                steps.append(own_admission)
            if (body_step := strict_body_step(handler)) is not None:
                steps.append(body_step)
            previous = [layer.before_request for layer in handler.ownership_layers]
            if (plugin_step := next((h for h in reversed(previous) if h), None)) is not None:
                steps.append(plugin_step)
            handler.before_request = chain_steps(steps)


def _allow_header(methods: Iterable[str]) -> AfterRequestHookHandler:
    """Litestar 2's automatic OPTIONS answer lists only one of a path's methods
    (litestar#4169, fixed in 3.0); this sets the full ``Allow`` list."""
    allow = ", ".join(sorted(methods))

    async def set_allow(response: Response[Any]) -> Response[Any]:
        response.headers["Allow"] = allow
        return response

    return set_allow


def chain_steps(steps: list[RequestStep]) -> RequestStep:
    """One ``before_request`` hook: :func:`start_request`, then ``steps`` in order
    until one answers."""
    ordered = tuple(steps)

    async def run_steps(request: Request[Any, Any, Any]) -> Any:
        start_request(request.scope)
        for step in ordered:
            answer = await step(request)
            if answer is not None:
                return answer
        return None

    return run_steps


def _validation_message(error: ValidationException, handler: BaseRouteHandler | None) -> str:
    """``Invalid request: <name>: <problem>; ...``, naming each parameter as the client
    sends it: Litestar reports the handler's argument (``content``), not the name it
    is declared under (``QueryParameter(name="data")``)."""
    parameters = handler.parsed_fn_signature.parameters if handler is not None else {}
    problems = []
    for item in error.extra if isinstance(error.extra, list) else []:
        if isinstance(item, dict):
            key = item.get("key")
            message = item.get("message", "invalid value")
            if key and item.get("source") != "body":
                argument, dot, rest = key.partition(".")
                field = parameters.get(argument)
                declared = field.kwarg_definition if field is not None else None
                if isinstance(declared, ParameterKwarg) and declared.name:
                    key = f"{declared.name}{dot}{rest}"
            problems.append(f"{key}: {message}" if key else str(message))
    return "Invalid request: " + ("; ".join(problems) if problems else str(error.detail))


def _handler_of_path(
    request: Request[Any, Any, Any], refusal: MethodNotAllowedException
) -> BaseRouteHandler | None:
    """A handler of the path a 405 answers, found by one of the methods its ``Allow``
    header lists: Litestar's router chose none, yet the path's product and rate limit
    report are the route's."""
    method = (refusal.headers or {}).get("allow", "").split(",")[0].strip()
    if not method:
        return None
    path = request.scope["path"]
    if root_path := request.scope.get("root_path"):
        path = path.split(root_path, maxsplit=1)[-1]  # as Litestar's router does
    try:
        _, handler, *_ = request.app.asgi_router.handle_routing(normalize_path(path), method)
    except HTTPException:
        return None
    return handler


def _error_handler(gateway: Gateway) -> Any:
    registry = gateway.registry
    mapper = gateway.error_mapper

    def handle(request: Request[Any, Any, Any], error: Exception) -> Response[bytes]:
        scope: Scope = request.scope
        start_request(scope)  # a no-op unless the request matched no route
        handler = scope.get("route_handler")
        if handler is None and isinstance(error, MethodNotAllowedException):
            handler = _handler_of_path(request, error)
            if handler is not None and (report := handler.opt.get(REPORT)) is not None:
                scope["state"][PATH_REPORT] = report
        gate: Gate | None = handler.opt.get(GATE) if handler is not None else None
        product = gate.product if gate is not None else registry.product_for_path(scope["path"])
        rid = request_id(scope)
        headers: dict[str, str] = {}
        extra: dict[str, Any] = {}
        if isinstance(error, ApiError):
            status, message, headers, extra = (
                error.status_code,
                error.message,
                error.headers,
                error.extra,
            )
        elif isinstance(error, ValidationException):
            status, message = 400, _validation_message(error, handler)
        elif isinstance(error, HTTPException):
            status, message = error.status_code, str(error.detail)
            headers = dict(error.headers or {})
        elif database_unavailable(error):
            status, message = 503, "The database is temporarily unavailable; retry shortly"
            headers = {"Retry-After": "1"}
            log.warning("database unavailable (request id %s): %s", rid, error)
        else:
            status, message = 500, "Internal server error"
            log.exception("unhandled error (request id %s)", rid, exc_info=error)
        if status >= 500 and isinstance(error, HTTPException):
            status, message = 500, "Internal server error"
        return mapper.to_response(
            status, message, product, request_id=rid, headers=headers, extra=extra
        )

    return handle
