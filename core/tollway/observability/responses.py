"""What every response leaves behind: its metrics and, when enabled, its access log line.

A ``before_send`` hook, run when the response headers go out (no middleware layer of
its own). It reads what the request path left in the scope: the route's
:class:`~tollway.observability.metrics.RouteMetrics` (attached to each product route
at start-up under :data:`OBSERVED`) and the time the request's handling started
(:func:`tollway.state.request_state`). Requests matching no route are counted per
product prefix under the route ``unmatched``. The probes, ``/metrics`` and the OpenAPI
routes are neither counted nor logged: they are not product traffic, and a load
balancer probing every second would drown it out.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import TYPE_CHECKING, cast

from litestar.types import HTTPScope, Message, Scope

from tollway.observability.logs import ACCESS_LOGGER, access_log_enabled
from tollway.observability.metrics import HTTP_METHODS, RouteMetrics
from tollway.state import request_state

if TYPE_CHECKING:
    from tollway.gateway import Gateway

OBSERVED = "tollway.observed"
"""Route ``opt`` key of the route's :class:`RouteMetrics`."""


def response_observer(gateway: Gateway) -> Callable[[Message, Scope], Awaitable[None]]:
    """The ``before_send`` hook recording each response of ``gateway``'s app."""
    metrics = gateway.metrics
    registry = gateway.registry
    access = logging.getLogger(ACCESS_LOGGER) if access_log_enabled(gateway.settings) else None

    async def observe_response(message: Message, any_scope: Scope) -> None:
        if message["type"] != "http.response.start":
            return
        # Only an HTTP request's response starts with this message.
        scope = cast("HTTPScope", any_scope)
        method = scope["method"]
        handler = scope.get("route_handler")
        route: RouteMetrics | None
        if handler is None:
            product = registry.product_for_path(scope["path"])
            route = metrics.unmatched(product.name if product is not None else "")
            if method not in HTTP_METHODS:
                method = "OTHER"
        else:
            route = handler.opt.get(OBSERVED)
            if route is None:
                return
        state = request_state(scope)
        seconds = perf_counter() - state.started
        status = message["status"]
        route.record(method, status, seconds)
        if access is not None:
            access.info(
                "%s %s %d",
                method,
                scope["path"],
                status,
                extra={
                    "method": method,
                    "path": scope["path"],
                    "status": status,
                    "duration_ms": round(seconds * 1000, 3),
                    "request_id": state.request_id,
                    "product": route.product or None,
                },
            )

    return observe_response
