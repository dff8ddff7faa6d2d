"""Prometheus metrics: one registry per gateway, exposed at ``/metrics``.

Every gateway has its own :class:`GatewayMetrics` (never prometheus_client's global
registry), so any number of gateways share a process without colliding, and each
``serve --workers`` process reports its own counts.

The per-request metrics cost little on the request path: each route gets a
:class:`RouteMetrics` at start-up, bound to its labels, that counts in plain numbers
(a dictionary increment and a bucket increment per response: several times cheaper
than prometheus_client's locked counters and histograms), and :class:`_RouteCollector`
turns them into metric families when ``/metrics`` is scraped. Responses are recorded
on the event loop that also answers the scrape, so no lock is needed. The rare events
(limiter errors, webhook outcomes) use prometheus_client's own counters.
"""

from __future__ import annotations

import hmac
import logging
import math
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterator
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from litestar import Request, Response, get
from litestar.handlers import HTTPRouteHandler
from prometheus_client import CollectorRegistry, Counter, Gauge, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from tollway.admission.access import bearer_token
from tollway.errors import Unauthorized
from tollway.jobs import JobQueue

if TYPE_CHECKING:
    from tollway.gateway import Gateway

log = logging.getLogger("tollway.metrics")

# No ``*_created`` series beside every counter and histogram: they double what each
# scrape carries and nothing here reads them. (prometheus_client's switch is global.)
disable_created_metrics()  # type: ignore[no-untyped-call]

UNMATCHED = "unmatched"
"""The ``route`` label of requests that matched no route (404, 405)."""

HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"})
"""Methods kept as labels of unmatched requests; any other is counted as ``OTHER``, so
clients cannot add label values at will."""

DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Seconds; finer than prometheus_client's default at the low end, where a gateway
answers, with 0.1 s (the spec's p99 promise) on a bound."""

_FIRST_BOUND = DURATION_BUCKETS[0]

WEBHOOK_OUTCOMES = ("succeeded", "retry", "failed", "dead")


class RouteMetrics:
    """The responses of one route (a product and a route template), in plain numbers."""

    __slots__ = ("buckets", "product", "responses", "route", "seconds")

    def __init__(self, product: str, route: str) -> None:
        self.product = product
        self.route = route
        self.responses: dict[str, dict[int, int]] = {}
        """Responses by method, then status (keys that hash for free: no tuple per
        response)."""
        self.buckets = [0] * (len(DURATION_BUCKETS) + 1)
        """Durations per bucket (not cumulative); the last one is above every bound."""
        self.seconds = 0.0

    def record(self, method: str, status: int, seconds: float) -> None:
        """Count one response and how long it took to start."""
        statuses = self.responses.get(method)
        if statuses is None:
            statuses = self.responses[method] = {}
        statuses[status] = statuses.get(status, 0) + 1
        # Most answers take under a millisecond: the first bucket, without a search.
        if seconds <= _FIRST_BOUND:
            self.buckets[0] += 1
        else:
            self.buckets[bisect_left(DURATION_BUCKETS, seconds)] += 1
        self.seconds += seconds


class _RouteCollector(Collector):
    """The metric families of every :class:`RouteMetrics`, built at scrape time."""

    def __init__(self, routes: dict[tuple[str, str], RouteMetrics]) -> None:
        self._routes = routes

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "tollway_requests",
            "Responses by product, method, route template and status.",
            labels=["product", "method", "route", "status"],
        )
        duration = HistogramMetricFamily(
            "tollway_request_duration_seconds",
            "Seconds from the start of a request's handling to its response headers.",
            labels=["product", "route"],
        )
        limited: dict[str, int] = {}
        bounds = [*(f"{bound}" for bound in DURATION_BUCKETS), "+Inf"]
        for route in list(self._routes.values()):
            limited.setdefault(route.product, 0)
            for method, statuses in list(route.responses.items()):
                for status, count in list(statuses.items()):
                    labels = [route.product, method, route.route, str(status)]
                    requests.add_metric(labels, count)
                    if status == 429:
                        limited[route.product] += count
            cumulative = accumulate(route.buckets)
            duration.add_metric(
                [route.product, route.route],
                list(zip(bounds, cumulative, strict=True)),
                route.seconds,
            )
        rate_limited = CounterMetricFamily(
            "tollway_rate_limited",
            "Requests refused with 429 by a rate limit.",
            labels=["product"],
        )
        for product, count in limited.items():
            rate_limited.add_metric([product], count)
        yield requests
        yield duration
        yield rate_limited


class GatewayMetrics:
    """The gateway's metrics and the registry they are exposed from."""

    def __init__(self, jobs: JobQueue) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self._routes: dict[tuple[str, str], RouteMetrics] = {}
        registry.register(_RouteCollector(self._routes))
        self.limiter_errors = Counter(
            "tollway_rate_limiter_errors_total",
            "Rate limit checks that found the limiter backend unreachable, by the "
            "rate_limit_failure policy applied (open: admitted, closed: 503).",
            ["policy"],
            registry=registry,
        )
        self.webhook_deliveries = Counter(
            "tollway_webhook_deliveries_total",
            "Webhook delivery attempts by outcome.",
            ["outcome"],
            registry=registry,
        )
        for outcome in WEBHOOK_OUTCOMES:
            self.webhook_deliveries.labels(outcome)
        for policy in ("open", "closed"):
            self.limiter_errors.labels(policy)
        self._job_queue_depth: Callable[[], Awaitable[int]] | None = getattr(jobs, "depth", None)
        self._depth_gauge = (
            Gauge(
                "tollway_job_queue_depth",
                "Jobs waiting to start in the job queue, read at scrape time.",
                registry=registry,
            )
            if self._job_queue_depth is not None
            else None
        )

    def route(self, product: str, route: str) -> RouteMetrics:
        """The metrics of ``product``'s route with path template ``route`` (one for
        every method served at that path)."""
        metrics = self._routes.get((product, route))
        if metrics is None:
            metrics = self._routes[(product, route)] = RouteMetrics(product, route)
        return metrics

    def unmatched(self, product: str) -> RouteMetrics:
        """The metrics of requests matching no route under ``product``'s prefix (``""``:
        under no product)."""
        return self.route(product, UNMATCHED)

    def count_limiter_error(self, policy: str) -> None:
        self.limiter_errors.labels(policy).inc()

    def count_webhook_outcome(self, outcome: str) -> None:
        self.webhook_deliveries.labels(outcome).inc()

    async def read_job_queue_depth(self) -> None:
        """Update the job queue depth gauge (``NaN`` when the queue cannot say)."""
        if self._job_queue_depth is None or self._depth_gauge is None:
            return
        try:
            depth: float = await self._job_queue_depth()
        except Exception:
            log.warning("could not read the job queue depth", exc_info=True)
            depth = math.nan
        self._depth_gauge.set(depth)

    async def exposition(self, accept: str = "") -> tuple[bytes, str]:
        """The registry in the format ``accept`` asks for (Prometheus text by default,
        OpenMetrics on request) and its content type."""
        await self.read_job_queue_depth()
        encode, content_type = choose_encoder(accept)
        return encode(self.registry), content_type


def metrics_route(gateway: Gateway) -> HTTPRouteHandler:
    """``GET /metrics``: public, or behind ``Authorization: Bearer <metrics_token>``."""
    metrics = gateway.metrics
    token = gateway.settings.metrics_token

    @get("/metrics", include_in_schema=False)
    async def serve_metrics(request: Request[Any, Any, Any]) -> Response[bytes]:
        if token is not None:
            presented = bearer_token(request.scope["headers"]) or ""
            if not hmac.compare_digest(presented.encode(), token.encode()):
                raise Unauthorized(
                    "Metrics need 'Authorization: Bearer <metrics_token>'",
                    headers={"WWW-Authenticate": "Bearer"},
                )
        body, content_type = await metrics.exposition(request.headers.get("accept", ""))
        return Response(body, headers={"content-type": content_type})

    return serve_metrics
