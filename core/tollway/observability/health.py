"""Probes for load balancers and orchestrators: ``/healthz`` and ``/readyz``.

Both are public (no key, no rate limit) and left out of the OpenAPI document.
``/healthz`` says the process answers and touches nothing else. ``/readyz`` asks the
database for ``SELECT 1`` and Redis (when ``redis_url`` is set) for ``PING``, both at
once, each bounded by ``readiness_timeout``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING

import msgspec
from litestar import Response, get
from litestar.handlers import HTTPRouteHandler
from sqlalchemy import text

from tollway.db import Database

if TYPE_CHECKING:
    import redis.asyncio

    from tollway.gateway import Gateway

OK = "ok"
NOT_CONFIGURED = "not configured"


class Health(msgspec.Struct, frozen=True):
    status: str


class ReadinessReport(msgspec.Struct, frozen=True):
    status: str
    """``ready`` or ``unavailable``."""
    checks: dict[str, str]
    """Each dependency: ``ok``, ``not configured``, or why it failed."""


class Readiness:
    """The dependencies a gateway needs to serve, checked on demand."""

    def __init__(self, database: Database, redis_url: str | None, timeout: float) -> None:
        self._database = database
        self._redis_url = redis_url
        self._timeout = timeout
        self._redis: redis.asyncio.Redis | None = None

    @classmethod
    def for_gateway(cls, gateway: Gateway) -> Readiness:
        settings = gateway.settings
        return cls(gateway.database, settings.redis_url, settings.readiness_timeout)

    async def check(self) -> ReadinessReport:
        database, redis_state = await asyncio.gather(
            self._bounded(self._check_database()), self._bounded(self._check_redis())
        )
        checks = {"database": database, "redis": redis_state}
        ready = all(state in (OK, NOT_CONFIGURED) for state in checks.values())
        return ReadinessReport("ready" if ready else "unavailable", checks)

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    async def _bounded(self, check: Awaitable[str]) -> str:
        try:
            async with asyncio.timeout(self._timeout):
                return await check
        except TimeoutError:
            return f"no answer within {self._timeout:g} s"
        except Exception as error:
            return f"{type(error).__name__}: {error}"

    async def _check_database(self) -> str:
        async with self._database.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
        return OK

    async def _check_redis(self) -> str:
        if self._redis_url is None:
            return NOT_CONFIGURED
        if self._redis is None:
            import redis.asyncio

            # Kept between probes, so a probe costs a PING, not a new connection.
            self._redis = redis.asyncio.Redis.from_url(
                self._redis_url,
                socket_connect_timeout=self._timeout,
                socket_timeout=self._timeout,
            )
        await self._redis.ping()
        return OK


def health_routes(readiness: Readiness) -> list[HTTPRouteHandler]:
    """``GET /healthz`` and ``GET /readyz``."""

    @get("/healthz", include_in_schema=False, sync_to_thread=False)
    def healthz() -> Health:
        return Health(OK)

    @get("/readyz", include_in_schema=False)
    async def readyz() -> Response[ReadinessReport]:
        report = await readiness.check()
        return Response(report, status_code=200 if report.status == "ready" else 503)

    return [healthz, readyz]
