"""Health probes, Prometheus metrics and structured logs, against real backends and a
real ``tollway serve``."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from litestar import get
from litestar.params import PathParameter
from prometheus_client.parser import text_string_to_metric_families

from tollway import (
    CurrentCaller,
    Gateway,
    Plan,
    Product,
    RouteRegistrar,
    Settings,
    hookimpl,
    load_settings,
)
from tollway.app import create_app
from tollway.billing.engine import RUN_JOB
from tollway.jobs import InProcessJobQueue, JobFunction
from tollway.observability.logs import access_log_enabled, configure_logging
from tollway.observability.metrics import GatewayMetrics
from tollway.testing import (
    GatewayFactory,
    GatewayProcess,
    RedisServer,
    free_port,
    gateway_client,
)

log = logging.getLogger("tests.things")


@get("/things/{thing_id:int}", scope="things:read")
async def read_thing(
    thing_id: Annotated[int, PathParameter()], caller: CurrentCaller
) -> dict[str, int]:
    log.info("thing read", extra={"thing_id": thing_id})
    return {"id": thing_id}


@get("/open", public=True)
async def open_route() -> dict[str, bool]:
    return {"open": True}


@get("/boom", scope="things:read")
async def boom() -> None:
    raise RuntimeError("kaboom")


class ThingsPlugin:
    """Product ``things`` at /v1/things: a keyed route with a path parameter, a
    public one and one that fails; plan ``tiny`` allows 2 requests a day."""

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(Product("things", "/v1/things"))

    @hookimpl
    def tollway_register_scopes(self, register: Callable[[str, str], None]) -> None:
        register("things:read", "Read things")

    @hookimpl
    def tollway_register_plans(self, register: Callable[[str, Plan], None]) -> None:
        register("things", Plan("tiny", requests_per_day=2))
        register("things", Plan("big", requests_per_day=1000, rank=1))

    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        register("things", [read_thing, open_route, boom])


async def _things(factory: GatewayFactory, **settings: Any) -> Gateway:
    return await factory(plugins=[], extra_plugins=[("things", ThingsPlugin())], **settings)


async def _bearer(gateway: Gateway, plan: str = "big") -> dict[str, str]:
    account = await gateway.accounts.create_account("acme", {"things": plan})
    created = await gateway.accounts.create_key(account, scopes=["things:read"])
    return {"Authorization": f"Bearer {created.key}"}


def _samples(exposition: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a Prometheus text exposition, parsed by prometheus_client."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
    }


def _value(
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float | None:
    return samples.get((name, frozenset(labels.items())))


async def _scrape(client: httpx.AsyncClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = await client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return _samples(response.text)


def _unreachable_database_url() -> str:
    return f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/tollway"


@asynccontextmanager
async def _without_lifespan(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the things gateway's app, never started: nothing connects anywhere
    unless a request makes it."""
    app = create_app(Gateway(settings, extra_plugins=[("things", ThingsPlugin())]))
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


# Probes -----------------------------------------------------------------------------


async def test_healthz_answers_with_the_database_and_redis_unreachable() -> None:
    settings = load_settings(
        environ={},
        plugins=[],
        database_url=_unreachable_database_url(),
        redis_url=f"redis://127.0.0.1:{free_port()}/0",
    )
    async with _without_lifespan(settings) as client:
        responses = [await client.get("/healthz") for _ in range(30)]
    assert {response.status_code for response in responses} == {200}
    assert responses[0].json() == {"status": "ok"}
    assert "x-ratelimit-limit" not in responses[0].headers
    assert responses[0].headers["x-request-id"]


async def test_readyz_reports_each_backend_ready(gateway_factory: GatewayFactory) -> None:
    gateway = await _things(gateway_factory)
    async with gateway_client(gateway) as client:
        responses = [await client.get("/readyz") for _ in range(20)]
    assert {response.status_code for response in responses} == {200}
    redis = "ok" if gateway.settings.redis_url else "not configured"
    assert responses[0].json() == {
        "status": "ready",
        "checks": {"database": "ok", "redis": redis},
    }
    assert "x-ratelimit-limit" not in responses[0].headers


async def test_readyz_follows_a_stopped_redis_and_recovers_without_restart(
    gateway_factory: GatewayFactory, own_redis: RedisServer
) -> None:
    # The timeout bounds the check of a dead backend; it must also let a live one answer
    # on a loaded CI machine (0.5 s once did not, and "before" was 503).
    gateway = await _things(gateway_factory, redis_url=own_redis.url, readiness_timeout=2.0)
    async with gateway_client(gateway) as client:
        before = await client.get("/readyz")
        own_redis.stop()
        started = time.monotonic()
        during = await client.get("/readyz")
        took = time.monotonic() - started
        own_redis.start()
        after = await client.get("/readyz")
    assert before.status_code == 200
    assert before.json()["checks"] == {"database": "ok", "redis": "ok"}
    assert during.status_code == 503
    body = during.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert "ConnectionError" in body["checks"]["redis"], body
    assert took < 10  # bounded by the timeout, not by a hang on the dead backend
    assert after.status_code == 200
    assert after.json()["checks"]["redis"] == "ok"


async def test_readyz_is_503_when_the_database_refuses_connections() -> None:
    settings = load_settings(environ={}, plugins=[], database_url=_unreachable_database_url())
    gateway = Gateway(settings, extra_plugins=[("things", ThingsPlugin())])
    async with gateway_client(gateway) as client:
        response = await client.get("/readyz")
        health = await client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["redis"] == "not configured"
    assert "refused" in body["checks"]["database"].lower(), body
    assert health.status_code == 200


async def test_readyz_gives_up_on_silent_backends_after_the_timeout(silent_port: int) -> None:
    settings = load_settings(
        environ={},
        plugins=[],
        database_url=f"postgresql+asyncpg://postgres@127.0.0.1:{silent_port}/tollway",
        redis_url=f"redis://127.0.0.1:{silent_port}/0",
        readiness_timeout=0.3,
    )
    # Not started: the job queue would wait on the silent Redis too.
    async with _without_lifespan(settings) as client:
        started = time.monotonic()
        response = await client.get("/readyz")
        took = time.monotonic() - started
    assert response.status_code == 503
    assert response.json()["checks"] == {
        "database": "no answer within 0.3 s",
        "redis": "no answer within 0.3 s",
    }
    # Silent backends would hold it for minutes (TCP's own timeouts): 10 s proves the
    # bound without depending on how loaded the machine is.
    assert 0.3 <= took < 10


async def test_probes_and_metrics_stay_out_of_the_openapi_document(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _things(gateway_factory)
    paths = set(create_app(gateway).openapi_schema.paths or {})
    assert paths == {"/v1/things/things/{thing_id}", "/v1/things/open", "/v1/things/boom"}


# Metrics ----------------------------------------------------------------------------


async def test_requests_are_counted_by_route_template_method_and_status(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _things(gateway_factory)
    headers = await _bearer(gateway)
    async with gateway_client(gateway) as client:
        for thing_id in (1, 2, 3):
            assert (await client.get(f"/v1/things/things/{thing_id}", headers=headers)).is_success
        assert (await client.get("/v1/things/things/4")).status_code == 401
        assert (await client.get("/v1/things/open")).is_success
        assert (await client.get("/v1/things/nowhere")).status_code == 404
        assert (await client.get("/elsewhere")).status_code == 404
        assert (await client.request("BREW", "/v1/things/open")).status_code == 405
        await client.get("/healthz")
        await client.get("/readyz")
        samples = await _scrape(client)

    route = "/v1/things/things/{thing_id}"
    requests = "tollway_requests_total"
    assert _value(samples, requests, product="things", method="GET", route=route, status="200") == 3
    assert _value(samples, requests, product="things", method="GET", route=route, status="401") == 1
    assert (
        _value(
            samples, requests, product="things", method="GET", route="/v1/things/open", status="200"
        )
        == 1
    )
    unmatched = {"route": "unmatched", "status": "404", "method": "GET"}
    assert _value(samples, requests, product="things", **unmatched) == 1
    assert _value(samples, requests, product="", **unmatched) == 1
    assert (
        _value(samples, requests, product="things", method="OTHER", route="unmatched", status="405")
        == 1
    )
    counted = [labels for name, labels in samples if name == requests]
    assert all(("route", "/v1/things/things/1") not in labels for labels in counted)
    assert all(
        dict(labels)["route"] not in ("/healthz", "/readyz", "/metrics") for labels in counted
    )
    assert len(counted) == 6

    duration = "tollway_request_duration_seconds"
    assert _value(samples, f"{duration}_count", product="things", route=route) == 4
    total = _value(samples, f"{duration}_sum", product="things", route=route)
    assert total is not None
    assert 0 < total < 4
    fast = _value(samples, f"{duration}_bucket", product="things", route=route, le="10.0")
    assert fast == 4


async def test_durations_fall_in_buckets_by_upper_bound() -> None:
    metrics = GatewayMetrics(InProcessJobQueue())
    route = metrics.route("things", "/v1/things/open")
    assert metrics.route("things", "/v1/things/open") is route  # one per template
    for seconds in (0.001, 0.2, 20.0):
        route.record("GET", 200, seconds)
    route.record("POST", 429, 0.0005)
    body, content_type = await metrics.exposition()
    assert content_type.startswith("text/plain; version=0.0.4")
    samples = _samples(body.decode())
    labels = {"product": "things", "route": "/v1/things/open"}
    bucket = "tollway_request_duration_seconds_bucket"
    cumulative = {
        le: _value(samples, bucket, le=le, **labels)
        for le in ("0.001", "0.1", "0.25", "10.0", "+Inf")
    }
    assert cumulative == {"0.001": 2, "0.1": 2, "0.25": 3, "10.0": 3, "+Inf": 4}
    assert _value(samples, "tollway_request_duration_seconds_sum", **labels) == pytest.approx(
        20.2015
    )
    assert _value(samples, "tollway_requests_total", method="POST", status="429", **labels) == 1
    assert _value(samples, "tollway_rate_limited_total", product="things") == 1
    assert _value(samples, "tollway_rate_limiter_errors_total", policy="open") == 0


async def test_rate_limited_requests_are_counted_per_product(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _things(gateway_factory)
    headers = await _bearer(gateway, plan="tiny")
    async with gateway_client(gateway) as client:
        statuses = [
            (await client.get("/v1/things/things/1", headers=headers)).status_code for _ in range(5)
        ]
        samples = await _scrape(client)
    assert statuses == [200, 200, 429, 429, 429]
    assert _value(samples, "tollway_rate_limited_total", product="things") == 3


@pytest.mark.parametrize("policy", ["open", "closed"])
async def test_limiter_errors_are_counted_by_failure_policy(
    gateway_factory: GatewayFactory, own_redis: RedisServer, policy: str
) -> None:
    gateway = await _things(gateway_factory, redis_url=own_redis.url, rate_limit_failure=policy)
    headers = await _bearer(gateway)
    async with gateway_client(gateway) as client:
        assert (await client.get("/v1/things/things/1", headers=headers)).is_success
        own_redis.stop()
        during = [
            (await client.get("/v1/things/things/1", headers=headers)).status_code for _ in range(2)
        ]
        own_redis.start()
        samples = await _scrape(client)
    assert during == ([200, 200] if policy == "open" else [503, 503])
    assert _value(samples, "tollway_rate_limiter_errors_total", policy=policy) == 2


class _HeldJobs:
    """A job that waits until released, to keep jobs queued while metrics are read."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def run(self) -> None:
        await self.release.wait()


class _OwnJobsQueue(InProcessJobQueue):
    """One job at a time, and only the test's: the billing clock's runs, enqueued
    whenever its poller ticks, would make the depth a race."""

    async def enqueue(self, name: str, /, **kwargs: Any) -> None:
        if name != RUN_JOB:
            await super().enqueue(name, **kwargs)


class _OneAtATimeQueue:
    @hookimpl
    def tollway_job_queue(self, gateway: Gateway) -> InProcessJobQueue:
        return _OwnJobsQueue(concurrency=1)


async def test_job_queue_depth_is_read_at_scrape_time(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(
        plugins=[], extra_plugins=[("things", ThingsPlugin()), ("queue", _OneAtATimeQueue())]
    )
    held = _HeldJobs()
    gateway.jobs.register("tests.held", held.run)
    async with gateway_client(gateway) as client:
        empty = await _scrape(client)
        for _ in range(4):
            await gateway.jobs.enqueue("tests.held")
        await asyncio.sleep(0.05)  # the one worker takes the first job
        busy = await _scrape(client)
        held.release.set()
        await asyncio.sleep(0.05)
        drained = await _scrape(client)
    assert _value(empty, "tollway_job_queue_depth") == 0
    assert _value(busy, "tollway_job_queue_depth") == 3
    assert _value(drained, "tollway_job_queue_depth") == 0


class _QueueWithoutDepth:
    """A job queue as written before queues could report their depth."""

    def __init__(self) -> None:
        self.functions: dict[str, JobFunction] = {}

    def register(self, name: str, function: JobFunction) -> None:
        self.functions[name] = function

    async def enqueue(self, name: str, /, **kwargs: Any) -> None:
        await self.functions[name](**kwargs)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


class _QueueWithoutDepthPlugin:
    @hookimpl
    def tollway_job_queue(self, gateway: Gateway) -> _QueueWithoutDepth:
        return _QueueWithoutDepth()


async def test_a_job_queue_without_depth_is_served_without_the_gauge(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory(
        plugins=[],
        extra_plugins=[("things", ThingsPlugin()), ("queue", _QueueWithoutDepthPlugin())],
    )
    async with gateway_client(gateway) as client:
        assert (await client.get("/v1/things/open")).is_success
        samples = await _scrape(client)
    assert _value(samples, "tollway_job_queue_depth") is None
    assert {name for name, _ in samples} >= {
        "tollway_requests_total",
        "tollway_request_duration_seconds_count",
        "tollway_webhook_deliveries_total",
    }


async def test_each_gateway_counts_into_its_own_registry(gateway_factory: GatewayFactory) -> None:
    first = await _things(gateway_factory)
    second = await _things(gateway_factory)
    assert first.metrics.registry is not second.metrics.registry
    async with gateway_client(first) as client:
        for _ in range(3):
            await client.get("/v1/things/open")
    async with gateway_client(second) as client:
        await client.get("/v1/things/open")
        samples = await _scrape(client)
    labels = {"product": "things", "method": "GET", "route": "/v1/things/open", "status": "200"}
    assert _value(samples, "tollway_requests_total", **labels) == 1
    assert first.metrics.registry.get_sample_value("tollway_requests_total", labels) == 3


async def test_metrics_token_guards_the_scrape(gateway_factory: GatewayFactory) -> None:
    gateway = await _things(gateway_factory, metrics_token="s3cret-scrape")
    async with gateway_client(gateway) as client:
        missing = await client.get("/metrics")
        wrong = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
        right = await client.get("/metrics", headers={"Authorization": "Bearer s3cret-scrape"})
        openmetrics = await client.get(
            "/metrics",
            headers={
                "Authorization": "Bearer s3cret-scrape",
                "Accept": "application/openmetrics-text; version=1.0.0",
            },
        )
    for refused in (missing, wrong):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert "metrics_token" in refused.json()["detail"]
    assert right.status_code == 200
    assert "tollway_requests_total" in right.text
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
    assert openmetrics.text.rstrip().endswith("# EOF")


# Logs -------------------------------------------------------------------------------


@pytest.fixture
def log_stream() -> Iterator[Callable[..., io.StringIO]]:
    """``log_stream(**settings)``: logging configured from ``settings`` into a fresh
    stream; logging as it was before (text) afterwards."""
    root_level = logging.getLogger().level

    def configure(**settings: Any) -> io.StringIO:
        stream = io.StringIO()
        configure_logging(load_settings(environ={}, **settings), stream)
        return stream

    yield configure
    configure_logging(load_settings(environ={}))
    logging.getLogger().setLevel(root_level)


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _assert_utc_time(value: str) -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", value), value
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert abs((datetime.now(UTC) - when).total_seconds()) < 60


@pytest.mark.parametrize(
    ("log_format", "access_log", "enabled"),
    [
        ("text", None, False),
        ("json", None, True),
        ("text", True, True),
        ("json", False, False),
    ],
)
def test_the_access_log_defaults_to_on_for_json_only(
    log_format: str, access_log: bool | None, enabled: bool
) -> None:
    settings = load_settings(environ={}, log_format=log_format, access_log=access_log)
    assert access_log_enabled(settings) is enabled


def test_access_log_is_read_from_the_environment() -> None:
    settings = load_settings(environ={"TOLLWAY_LOG_FORMAT": "json", "TOLLWAY_ACCESS_LOG": "no"})
    assert (settings.log_format, settings.access_log) == ("json", False)


async def test_json_logs_carry_the_request_id_extra_fields_and_tracebacks(
    gateway_factory: GatewayFactory, log_stream: Callable[..., io.StringIO]
) -> None:
    stream = log_stream(log_format="json")
    gateway = await _things(gateway_factory, log_format="json")
    headers = await _bearer(gateway)
    async with gateway_client(gateway) as client:
        read = await client.get(
            "/v1/things/things/7", headers={**headers, "X-Request-ID": "lb-request-0001"}
        )
        failed = await client.get("/v1/things/boom", headers=headers)
    assert read.headers["x-request-id"] == "lb-request-0001"
    lines = _json_lines(stream.getvalue())
    for line in lines:
        assert list(line)[:4] == ["time", "level", "logger", "message"]
        _assert_utc_time(line["time"])

    [thing] = [line for line in lines if line["logger"] == "tests.things"]
    assert thing["message"] == "thing read"
    assert thing["level"] == "INFO"
    assert thing["thing_id"] == 7
    assert thing["request_id"] == "lb-request-0001"

    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["logger"] == "tollway"
    assert error["request_id"] == failed.headers["x-request-id"] == failed.json()["request_id"]
    assert "RuntimeError: kaboom" in error["exc_info"]

    access = [line for line in lines if line["logger"] == "tollway.access"]
    assert [(line["path"], line["status"]) for line in access] == [
        ("/v1/things/things/7", 200),
        ("/v1/things/boom", 500),
    ]
    first = access[0]
    assert first["level"] == "INFO"
    assert first["method"] == "GET"
    assert first["product"] == "things"
    assert first["request_id"] == "lb-request-0001"
    assert isinstance(first["duration_ms"], float)
    assert first["duration_ms"] > 0
    assert first["message"] == "GET /v1/things/things/7 200"


async def test_text_logs_have_no_access_log_unless_asked(
    gateway_factory: GatewayFactory, log_stream: Callable[..., io.StringIO]
) -> None:
    quiet = log_stream()
    gateway = await _things(gateway_factory)
    async with gateway_client(gateway) as client:
        await client.get("/v1/things/open")
    assert "tollway.access" not in quiet.getvalue()
    assert "/v1/things/open" not in quiet.getvalue()

    stream = log_stream(access_log=True)
    gateway = await _things(gateway_factory, access_log=True)
    async with gateway_client(gateway) as client:
        response = await client.get("/v1/things/open")
    [line] = stream.getvalue().splitlines()
    assert line.endswith(f" {response.headers['x-request-id']} GET /v1/things/open 200"), line


@pytest.fixture
def served(tmp_path: Path) -> Iterator[GatewayProcess]:
    """``tollway serve`` with the code product and JSON logs, on a fresh SQLite file."""
    gateway = GatewayProcess(
        plugins=["code"],
        ready_path="/healthz",
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'tollway.db'}",
        log_format="json",
    )
    with gateway:
        yield gateway


def test_a_served_gateway_writes_json_log_lines_and_serves_the_probes(
    served: GatewayProcess,
) -> None:
    with httpx.Client(base_url=served.url, timeout=10) as client:
        ready = client.get("/readyz")
        public = client.get("/v1/code/types", headers={"X-Request-ID": "probe-request-42"})
        keyless = client.get("/v1/code/usage")
        missing = client.get("/v1/code/nothing-here")
        metrics = client.get("/metrics")
    served.stop()
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ready",
        "checks": {"database": "ok", "redis": "not configured"},
    }
    assert (public.status_code, keyless.status_code, missing.status_code) == (200, 401, 404)
    samples = _samples(metrics.text)
    assert (
        _value(
            samples,
            "tollway_requests_total",
            product="code",
            method="GET",
            route="/v1/code/types",
            status="200",
        )
        == 1
    )

    lines = [line for line in served.log.splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines]  # every line on stderr is one JSON object
    for line in parsed:
        _assert_utc_time(line["time"])
    access = {line["path"]: line for line in parsed if line["logger"] == "tollway.access"}
    assert set(access) == {"/v1/code/types", "/v1/code/usage", "/v1/code/nothing-here"}
    for response in (public, keyless, missing):
        line = access[response.url.path]
        assert line["request_id"] == response.headers["x-request-id"]
        assert line["status"] == response.status_code
        assert line["product"] == "code"
        assert line["method"] == "GET"
        assert line["duration_ms"] >= 0
    assert access["/v1/code/types"]["request_id"] == "probe-request-42"
