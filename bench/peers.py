"""What a Python team would build instead of tollway, as granian factories for
``bench/run.py``: the benchmark route behind an API-key check and a quota per key,
each written the way its framework's documentation shows.

* ``peers:litestar_peer_app`` - Litestar with its own ``RateLimitMiddleware``
  (in-memory store, the quota counted per key, its ``RateLimit-*`` headers) and an
  async guard that looks the key up and checks the scope the route names in ``opt``
  (the middleware runs first, so refused requests count against the quota too).
  Its window is ``$BENCH_LITESTAR_WINDOW``, ``second`` unless set (see
  :func:`litestar_peer_app` for why not ``day``);
* ``peers:fastapi_peer_app`` - FastAPI with slowapi (``Limiter``, in-memory storage,
  the quota counted per key, its ``X-RateLimit-*`` headers) and a ``Security``
  dependency on ``HTTPBearer`` doing the same lookup and scope check (before the
  limiter, as tollway does).

Both serve ``GET /v1/bench/ping`` -> ``{"ok": true}`` like ``bench/apps.py``'s apps.
The key table is built once at start-up from ``$BENCH_API_KEY`` (the key
``bench/run.py`` created in the gateway's database) and holds what tollway's keys
table holds: the SHA-256 hex of the key and its scopes. Every request hashes the
presented key and looks it up in that dict; tollway caches its own lookups for 1 s,
so a dict lookup is the fair counterpart::

    BENCH_API_KEY=tw_... PYTHONPATH=bench granian --interface asgi \\
        --factory peers:fastapi_peer_app
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from apps import PATH, REQUESTS_PER_DAY, SCOPE, ping
from fastapi import Depends, FastAPI, HTTPException, Request, Response, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer, SecurityScopes
from litestar import Litestar, get
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers import BaseRouteHandler
from litestar.middleware.rate_limit import DurationUnit, RateLimitConfig
from slowapi import Limiter, _rate_limit_exceeded_handler
from slowapi.errors import RateLimitExceeded

KEY_VARIABLE = "BENCH_API_KEY"
WINDOW_VARIABLE = "BENCH_LITESTAR_WINDOW"
LITESTAR_WINDOWS: tuple[DurationUnit, ...] = ("second", "day")


class KeyTable:
    """The scopes of each API key, by the SHA-256 hex of the key (what tollway stores)."""

    def __init__(self, scopes_by_key: Mapping[str, Iterable[str]]) -> None:
        self._scopes = {_sha256(key): frozenset(scopes) for key, scopes in scopes_by_key.items()}

    @classmethod
    def from_environment(cls) -> KeyTable:
        """The bench key from ``$BENCH_API_KEY``, with the benchmark route's scope."""
        return cls({os.environ[KEY_VARIABLE]: [SCOPE]})

    def scopes(self, key: str) -> frozenset[str] | None:
        """The scopes of ``key``; ``None`` for a key the table does not know."""
        return self._scopes.get(_sha256(key))


def _sha256(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def bearer_key(authorization: str) -> str:
    """The key of an ``Authorization: Bearer <key>`` header; empty for any other."""
    scheme, _, key = authorization.partition(" ")
    return key if scheme.lower() == "bearer" else ""


# --- Litestar ----------------------------------------------------------------------


async def litestar_key_guard(
    connection: ASGIConnection[Any, Any, Any, Any], route_handler: BaseRouteHandler
) -> None:
    """401 for a missing or unknown key, 403 for a key without ``opt["scope"]``."""
    keys: KeyTable = connection.app.state.api_keys
    scopes = keys.scopes(bearer_key(connection.headers.get("authorization", "")))
    if scopes is None:
        raise NotAuthorizedException("missing or unknown API key")
    if route_handler.opt["scope"] not in scopes:
        raise PermissionDeniedException(f"the key lacks scope {route_handler.opt['scope']}")


def litestar_identifier(request: ASGIConnection[Any, Any, Any, Any]) -> str:
    """The rate limit's client: the presented key (Litestar's default is the IP)."""
    return bearer_key(request.headers.get("authorization", ""))


def litestar_window() -> DurationUnit:
    """``$BENCH_LITESTAR_WINDOW``: ``second`` (the default) or ``day``."""
    window = os.environ.get(WINDOW_VARIABLE, "second")
    for unit in LITESTAR_WINDOWS:
        if window == unit:
            return unit
    raise ValueError(f"${WINDOW_VARIABLE} must be one of {LITESTAR_WINDOWS}, not {window!r}")


def litestar_peer_app() -> Litestar:
    """Litestar's own rate limiting and guards around the benchmark route.

    Litestar's limiter keeps one timestamp per request of the current window and
    decodes and re-encodes that list as JSON on every request, so a request costs time
    in proportion to the requests already counted in its window. With a ``day`` window
    throughput falls the longer the server runs, and the rounds of a run would not
    measure the same thing; a ``second`` window (10**9 a second, never reached) holds
    a second's requests at most: the cheapest configuration of Litestar's limiter,
    steady under load.
    """
    rate_limit = RateLimitConfig(
        rate_limit=(litestar_window(), REQUESTS_PER_DAY),
        identifier_for_request=litestar_identifier,
    )
    return Litestar(
        route_handlers=[get(PATH, guards=[litestar_key_guard], opt={"scope": SCOPE})(ping)],
        middleware=[rate_limit.middleware],
        state=State({"api_keys": KeyTable.from_environment()}),
    )


# --- FastAPI -----------------------------------------------------------------------

BEARER = HTTPBearer(auto_error=False)


async def fastapi_key_check(
    security_scopes: SecurityScopes,
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
) -> None:
    """401 for a missing or unknown key, 403 for a key without the route's scopes."""
    keys: KeyTable = request.app.state.api_keys
    scopes = None if credentials is None else keys.scopes(credentials.credentials)
    if scopes is None:
        raise HTTPException(401, "missing or unknown API key", {"WWW-Authenticate": "Bearer"})
    if not scopes.issuperset(security_scopes.scopes):
        raise HTTPException(403, f"the key lacks scope {security_scopes.scope_str}")


def fastapi_identifier(request: Request) -> str:
    """slowapi's ``key_func``: the presented key (slowapi's examples use the IP)."""
    return bearer_key(request.headers.get("authorization", ""))


def fastapi_peer_app() -> FastAPI:
    """FastAPI with slowapi and a key dependency around the benchmark route."""
    limiter = Limiter(key_func=fastapi_identifier, storage_uri="memory://", headers_enabled=True)
    app = FastAPI()
    app.state.api_keys = KeyTable.from_environment()
    app.state.limiter = limiter
    app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)  # type: ignore[arg-type]

    # slowapi's decorator needs the request, and the response to put its headers on.
    @app.get(PATH, dependencies=[Security(fastapi_key_check, scopes=[SCOPE])])
    @limiter.limit(f"{REQUESTS_PER_DAY}/day")
    async def limited_ping(request: Request, response: Response) -> dict[str, bool]:
        return await ping()

    return app
