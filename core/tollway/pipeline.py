"""The request path: key -> subscription -> scope -> per-product rate limit.

Runs as the first ``before_request`` step of every keyed route, before the body is
read, so a request without a valid key never costs body decoding. (Not a Litestar
guard: Litestar copies the route handler for every guard call, which cost more than
all the checks here.) What it learns is left in the ASGI scope's state: the caller for
the handler, the rate limit headers for the ``before_send`` hook that stamps every
response. A product admitting requests its own way also reports its window on the
responses its admission never reached (see :data:`REPORT`).
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

import msgspec
from litestar import Request
from litestar.di import NamedDependency
from litestar.types import Message, Scope

from tollway.auth import KeyAuthenticator, Principal
from tollway.errors import Forbidden, ServiceUnavailable, TooManyRequests, Unauthorized
from tollway.observability.logs import current_request_id
from tollway.plans import daily_quota
from tollway.ratelimit import Decision, Quota, RateLimiter, RateLimiterUnavailable
from tollway.registry import Plan, Product
from tollway.scopes import ScopeChecker
from tollway.settings import FailurePolicy

if TYPE_CHECKING:
    from tollway.gateway import Gateway

log = logging.getLogger("tollway.pipeline")

GATE = "tollway.gate"
CALLER = "tollway.caller"
RESPONSE_HEADERS = "tollway.headers"
REQUEST_ID = "tollway.request_id"
STARTED = "tollway.started"
PATH_REPORT = "tollway.path_report"
"""Scope state key: the :data:`REPORT` step of the path a 405 answers, where no route
handler (and so no ``opt``) was chosen."""

REPORT = "report"
"""Route ``opt`` key: ``report=<async step(scope)>`` puts the caller's rate limit
headers in the scope state, as admission does, without counting anything. It runs when
a response of the route goes out without them: an automatic ``OPTIONS`` answer, a
request refused before its admission ran (a body too large), a 405 for the route's
path. Products counting requests their own way (``admit=...``) set it, so that every
response carries their window."""

Reporter = Callable[[Scope], Awaitable[None]]

_REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{8,128}")
_BEARER = "bearer "


@dataclass(frozen=True, slots=True)
class Gate:
    """What a route requires, computed once at start-up from its ``opt``."""

    product: Product
    pipeline: Pipeline
    scope: str | None = None
    admin: bool = False
    public: bool = False


class Caller(msgspec.Struct, frozen=True, gc=False):
    """An admitted request's identity, plan and rate limit state, for handlers."""

    principal: Principal
    product: Product
    plan: Plan
    decision: Decision | None
    """``None`` when the limiter was unreachable and the policy let the request in."""


CurrentCaller = NamedDependency[Caller]
"""Annotate a handler parameter named ``caller`` with this to receive the caller."""


_REQUEST_ID_PREFIX = secrets.token_hex(8)
_request_counter = itertools.count(1)


def _new_request_id() -> str:
    # Unique, not secret: a random per-process prefix and a counter cost a fraction of
    # fresh random bytes on every request.
    return f"{_REQUEST_ID_PREFIX}{next(_request_counter):016x}"


def request_id(scope: Scope) -> str:
    """This request's id: a well-formed inbound ``X-Request-ID`` is kept (so a load
    balancer's id follows the request), otherwise a new one (32 hex digits). Made
    once per request, when it also becomes :data:`current_request_id` for the logs."""
    state = scope.setdefault("state", {})
    current: str | None = state.get(REQUEST_ID)
    if current is None:
        current = ""
        for name, value in scope.get("headers", ()):
            if name == b"x-request-id":
                inbound = value.decode("latin-1")
                if _REQUEST_ID_PATTERN.fullmatch(inbound):
                    current = inbound
                break
        current = current or _new_request_id()
        state[REQUEST_ID] = current
        current_request_id.set(current)
    return current


def start_request(scope: Scope) -> None:
    """The first thing done for a request: note when it started (for its duration
    metric and access log) and make its id, so logs written while serving it carry it.
    Run by the first ``before_request`` step of every product route, and by the error
    handler for requests that matched none."""
    state = scope["state"]
    if STARTED not in state:
        state[STARTED] = perf_counter()
        request_id(scope)


async def stamp_response_headers(message: Message, scope: Scope) -> None:
    """``before_send`` hook: every response gets its request id and rate limit headers,
    reported by the route's :data:`REPORT` step when no admission left any."""
    if message["type"] != "http.response.start":
        return
    headers = message.get("headers")
    if type(headers) is not list:
        # Litestar hands over a fresh list per response; anything else is copied.
        headers = message["headers"] = list(headers or ())
    headers.append((b"x-request-id", request_id(scope).encode()))
    state = scope["state"]
    extra = state.get(RESPONSE_HEADERS)
    if extra is None:
        extra = await _reported_headers(scope, state)
    if extra:
        headers.extend(extra)


async def _reported_headers(scope: Scope, state: dict[str, Any]) -> list[tuple[bytes, bytes]]:
    handler = scope.get("route_handler")
    report: Reporter | None = state.get(PATH_REPORT) or (
        handler.opt.get(REPORT) if handler is not None else None
    )
    if report is None:
        return []
    try:
        await report(scope)
    except Exception:
        # The answer is decided and about to go out: a report that cannot be made (its
        # limiter or database unreachable) leaves the headers out, never the answer.
        log.warning("rate limit report failed for %s", scope["path"], exc_info=True)
        return []
    reported: list[tuple[bytes, bytes]] = state.get(RESPONSE_HEADERS, [])
    return reported


def _bearer_token(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            text = value.decode("latin-1")
            if text[:7].lower() == _BEARER:
                return text[7:].strip()
            return None
    return None


class Pipeline:
    """The gateway checks, in the spec's order, with every mechanism from its hook."""

    def __init__(
        self,
        authenticator: KeyAuthenticator,
        checker: ScopeChecker,
        limiter: RateLimiter,
        plans: Mapping[str, Mapping[str, Plan]],
        failure_policy: FailurePolicy,
        *,
        on_limiter_error: Callable[[FailurePolicy], None] | None = None,
    ) -> None:
        self.authenticator = authenticator
        self.checker = checker
        self.limiter = limiter
        self.plans = plans
        self.failure_policy = failure_policy
        self.on_limiter_error = on_limiter_error
        self._quotas: dict[tuple[str, str], Quota] = {
            (product, name): daily_quota(plan)
            for product, product_plans in plans.items()
            for name, plan in product_plans.items()
        }

    @classmethod
    def for_gateway(cls, gateway: Gateway) -> Pipeline:
        return cls(
            gateway.authenticator,
            gateway.scope_checker,
            gateway.rate_limiter,
            gateway.plans,
            gateway.settings.rate_limit_failure,
            on_limiter_error=gateway.metrics.count_limiter_error,
        )

    async def admit(self, scope: Scope, gate: Gate) -> Caller:
        token = _bearer_token(scope)
        if not token:
            raise Unauthorized(
                "Missing API key: send 'Authorization: Bearer <API key>'",
                headers={"WWW-Authenticate": "Bearer"},
            )
        principal = await self.authenticator.authenticate(token)
        if principal is None:
            raise Unauthorized("Invalid API key", headers={"WWW-Authenticate": "Bearer"})
        if principal.expired(time.time()):
            raise Unauthorized("API key has expired", headers={"WWW-Authenticate": "Bearer"})
        product = gate.product.name
        plan_name = principal.plans.get(product)
        plan = self.plans[product].get(plan_name) if plan_name is not None else None
        if plan is None:
            raise Forbidden(f"No active subscription to the '{product}' product")
        quota = self._quotas[(product, plan.name)]
        key = f"{product}:{principal.account_id}"
        refusal = self._refusal(principal, gate)
        if refusal is not None:
            await self._report(scope, key, quota)
            raise refusal
        decision = await apply_failure_policy(
            self.limiter.hit(key, quota),
            self.failure_policy,
            key,
            on_unavailable=self.on_limiter_error,
        )
        if decision is not None:
            scope["state"][RESPONSE_HEADERS] = decision.headers()
            if not decision.allowed:
                raise TooManyRequests(
                    f"Rate limit of {decision.limit} requests per day for the '{product}' "
                    f"product exceeded; retry after {decision.retry_after} s"
                )
        return Caller(principal, gate.product, plan, decision)

    def _refusal(self, principal: Principal, gate: Gate) -> Forbidden | None:
        if gate.admin and not principal.is_admin:
            return Forbidden("This endpoint requires an admin API key")
        if gate.scope is not None and not self.checker.grants(principal.scopes, gate.scope):
            return Forbidden(f"API key lacks the required scope '{gate.scope}'")
        return None

    async def _report(self, scope: Scope, key: str, quota: Quota) -> None:
        """A refused subscriber still learns its window, without spending it; the
        refusal stands even when the limiter cannot be reached."""
        try:
            decision = await self.limiter.peek(key, quota)
        except RateLimiterUnavailable:
            log.warning("rate limiter unreachable; refusing %s without rate limit headers", key)
            return
        # Retry-After belongs to the 429 alone, even when this window is used up.
        scope["state"][RESPONSE_HEADERS] = decision.headers(retry_after=False)


async def apply_failure_policy(
    check: Awaitable[Decision],
    policy: FailurePolicy,
    key: str,
    *,
    on_unavailable: Callable[[FailurePolicy], None] | None = None,
) -> Decision | None:
    """The limiter's decision, or, when its backend is unreachable, what the
    ``rate_limit_failure`` setting says: 503 (``closed``) or ``None`` (``open``: admit).
    ``on_unavailable(policy)`` is told of each unreachable check (the gateway's
    ``tollway_rate_limiter_errors_total`` metric)."""
    try:
        return await check
    except RateLimiterUnavailable:
        if on_unavailable is not None:
            on_unavailable(policy)
        if policy == "closed":
            raise ServiceUnavailable(
                "Rate limiting is temporarily unavailable; retry shortly",
                headers={"Retry-After": "1"},
            ) from None
        log.warning("rate limiter unreachable; admitting %s (policy: open)", key)
        return None


def admission_step(gate: Gate) -> Callable[[Request[Any, Any, Any]], Awaitable[None]]:
    """The ``before_request`` step admitting requests to a keyed route."""
    admit = gate.pipeline.admit

    async def admit_request(request: Request[Any, Any, Any]) -> None:
        scope = request.scope
        scope["state"][CALLER] = await admit(scope, gate)

    return admit_request


def current_caller(scope: Scope) -> Caller:
    """The caller admitted by the pipeline for this request (keyed routes only)."""
    caller: Caller = scope["state"][CALLER]
    return caller
