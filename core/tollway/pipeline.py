"""The request path: key -> subscription -> scope -> rate limit -> customer.

Each route's :class:`~tollway.admission.Access` is compiled once, at start-up, into a
:class:`Gate`: the step admitting its requests, which the route's entry
(:mod:`tollway.entry`) runs before Litestar makes a request object or reads the body,
so a request without a valid key never costs body decoding. (Not a Litestar guard:
Litestar copies the route handler for every guard call, which cost more than all the
checks here.) What admission learns goes into the request's
:class:`~tollway.state.RequestState`: the caller for the handler, the rate limit
headers for the ``send`` that stamps the response.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from litestar import Request
from litestar.types import Receive, Scope

from tollway.admission.access import Access, BearerKey, Refusals, bearer_of
from tollway.admission.customers import HEADER as CUSTOMER_HEADER
from tollway.admission.customers import Customer, CustomerTokens
from tollway.admission.express import (
    ADMITTED_ENTRIES,
    Caller,
    CurrentCaller,
    ExpressLanes,
    LeasingAuthenticator,
    TallyingLimiter,
)
from tollway.auth import KeyAuthenticator, Principal
from tollway.errors import ApiError, Forbidden, ServiceUnavailable, Unauthorized
from tollway.net import ClientAddress
from tollway.ratelimit import Algorithm, Decision, Quota, RateLimiter, RateLimiterUnavailable
from tollway.registry import Plan, Product
from tollway.scopes import ScopeChecker
from tollway.settings import FailurePolicy
from tollway.state import RequestState, request_state

if TYPE_CHECKING:
    from tollway.gateway import Gateway

log = logging.getLogger("tollway.pipeline")

__all__ = ["GATE", "Admit", "Caller", "CurrentCaller", "Express", "Gate", "Pipeline", "Reporter"]

GATE = "tollway.gate"
"""Route ``opt`` key of the route's :class:`Gate`, set at start-up."""

Admit = Callable[[Scope, Receive, RequestState], Awaitable[None]]
Express = Callable[[RequestState], bool]
Reporter = Callable[[Scope], Awaitable[None]]

_CUSTOMER_HEADER = CUSTOMER_HEADER.lower().encode()


@dataclass(frozen=True, slots=True)
class Gate:
    """A route's admission, compiled once at start-up from its :class:`Access`."""

    product: Product
    access: Access
    admit: Admit | None
    """The step admitting requests; ``None`` for public routes."""
    express: Express | None
    """The plain call admitting the common request, when the route has one: ``True``
    when it admitted, ``False`` to send the request to :attr:`admit`."""
    report: Reporter | None
    """Puts the caller's window on answers admission never reached (``access.report``)."""

    @property
    def public(self) -> bool:
        return self.access.public


class Pipeline:
    """The gateway's admission mechanisms, each from its hook; compiles gates."""

    def __init__(
        self,
        authenticator: KeyAuthenticator,
        checker: ScopeChecker,
        limiter: RateLimiter,
        plans: Mapping[str, Mapping[str, Plan]],
        failure_policy: FailurePolicy,
        *,
        clients: ClientAddress | None = None,
        customer_tokens: Callable[[], Awaitable[CustomerTokens]] | None = None,
        on_limiter_error: Callable[[FailurePolicy], None] | None = None,
    ) -> None:
        self.authenticator = authenticator
        self.checker = checker
        self.limiter = limiter
        self.plans = plans
        self.failure_policy = failure_policy
        self.clients = clients or ClientAddress(())
        self.customer_tokens = customer_tokens
        self.on_limiter_error = on_limiter_error

    @classmethod
    def for_gateway(cls, gateway: Gateway) -> Pipeline:
        return cls(
            gateway.authenticator,
            gateway.scope_checker,
            gateway.rate_limiter,
            gateway.plans,
            gateway.settings.rate_limit_failure,
            clients=ClientAddress(gateway.settings.trusted_proxies),
            customer_tokens=gateway.customer_tokens,
            on_limiter_error=gateway.metrics.count_limiter_error,
        )

    def gate(self, product: Product, access: Access) -> Gate:
        if access.public:
            return Gate(product, access, None, None, None)
        admission = _Admission(self, product, access)
        return Gate(
            product,
            access,
            admission.admit,
            admission.lanes.admit if admission.lanes is not None else None,
            admission.report if access.report else None,
        )

    def limiter_unavailable(self, key: str) -> None:
        """What the ``rate_limit_failure`` setting says when the limiter's backend is
        unreachable: 503 (``closed``) or no decision (``open``)."""
        if self.on_limiter_error is not None:
            self.on_limiter_error(self.failure_policy)
        if self.failure_policy == "closed":
            raise ServiceUnavailable(
                "Rate limiting is temporarily unavailable; retry shortly",
                headers={"Retry-After": "1"},
            ) from None
        log.warning("rate limiter unreachable; admitting %s (policy: open)", key)


_WWW_AUTHENTICATE = {"WWW-Authenticate": "Bearer"}
_Admitted = tuple[Principal, Plan, str, Quota]
"""An admitted principal, its plan, its limiter key and quota on one route."""
DEFAULT_REFUSALS = Refusals()


class _Admission:
    """One route's admission: the steps of its :class:`Access`, in the spec's order.

    Every request of the route runs :meth:`admit`, so what is the same for all of them
    is worked out here, once, and the request path reads it without attribute chains.
    """

    def __init__(self, pipeline: Pipeline, product: Product, access: Access) -> None:
        self.pipeline = pipeline
        self.authenticator = pipeline.authenticator
        self.limiter = pipeline.limiter
        self.product = product
        self.access = access
        # The default key source is read inline: a coroutine less on every request.
        self.bearer = type(access.key) is BearerKey
        # The plain-call ways in that the authenticator and limiter may offer.
        self.cached: Callable[[str], Principal | None] | None = getattr(
            self.authenticator, "cached", None
        )
        self.hit_now: Callable[[str, Quota], Decision] | None = getattr(
            self.limiter, "hit_now", None
        )
        self.known = self.bearer and access.check is None and self.cached is not None
        """Whether :meth:`_known` may admit: a bearer key, no product ``check`` to run
        first, an authenticator with a plain-call cache."""
        keys, limiter = self.authenticator, self.limiter
        self.lanes = (
            ExpressLanes(product, keys, limiter)
            if self.known
            and not access.customer
            and access.window.algorithm is Algorithm.FIXED_WINDOW
            and isinstance(keys, LeasingAuthenticator)
            and isinstance(limiter, TallyingLimiter)
            else None
        )
        """The route's express lanes (:mod:`tollway.admission.express`), where they
        admit as this would: not with a customer to verify on every request, nor on a
        sliding window (the limiter tallies fixed ones), nor with an authenticator or
        limiter that cannot lease or tally."""
        self.tokens: dict[bytes, str] = {}
        """Raw ``Authorization`` header -> its bearer token, so a busy key is parsed once."""
        self.admitted: dict[int, _Admitted] = {}
        """Key id -> what its principal's requests count against (see :meth:`_admitted`)."""
        self.plans = pipeline.plans[product.name]
        window = access.window
        self.quotas = {
            name: Quota(window.limit_of(plan), window.seconds, window.algorithm, window.policy)
            for name, plan in self.plans.items()
        }
        self.prefix = f"{product.name}:{window.counter}:" if window.counter else f"{product.name}:"
        self.words = {"product": product.name, "scope": access.scope or ""}
        if access.key is not None:
            self.words["key"] = access.key.name
        # Only the Authorization header has a challenge to name.
        bearer = isinstance(access.key, BearerKey)
        self.challenge: dict[str, str] = _WWW_AUTHENTICATE if bearer else {}

    def _say(self, text: str) -> str:
        return text.format(**self.words) if "{" in text else text

    async def admit(self, scope: Scope, receive: Receive, state: RequestState) -> None:
        access = self.access
        admitted = self._known(state.authorization) if self.known else None
        if admitted is not None:
            principal, plan, key, quota = admitted
            refusal = None
        else:
            request: Request[Any, Any, Any] | None = None
            if access.check is not None:
                request = Request(scope, receive)
                await access.check(request)
            if self.bearer:
                token = bearer_of(state.authorization)
            elif access.key is not None:
                token = await access.key.key(request or Request(scope, receive))
            else:
                token = None
            found = await self.authenticator.authenticate(token) if token else None
            admitted = self._admitted(found) if found is not None else None
            if admitted is not None:
                principal, plan, key, quota = admitted
                refusal = None
            else:
                # No key, or one unusable here: refused, or, on a route admitting
                # anonymous requests, counted against the address's window (a key then
                # still refused).
                subscriber, subscribed, refusal = self._identify(self._checked(token, found))
                anonymous = access.anonymous
                if anonymous is None:
                    assert refusal is not None
                    if subscriber is not None and subscribed is not None:
                        await self._report_refused(scope, subscriber, subscribed)
                    raise refusal
                principal, plan = None, self.plans[anonymous]
                key = f"{self.prefix}ip:{self.pipeline.clients.of(scope)}"
                quota = self.quotas[plan.name]
        try:
            hit_now = self.hit_now
            decision: Decision | None = (
                hit_now(key, quota) if hit_now is not None else await self.limiter.hit(key, quota)
            )
        except RateLimiterUnavailable:
            self.pipeline.limiter_unavailable(key)
            decision = None
        if decision is not None:
            state.headers = decision.headers()
            if not decision.allowed:
                raise access.refusals.too_many(decision, self.product, plan, self.plans)
        if refusal is not None:
            raise refusal
        if principal is not None:
            state.caller = Caller(principal, self.product, plan, decision)
            if access.customer:
                state.customer = await self._customer(scope, principal)
            elif self.lanes is not None and decision is not None:
                authorization = state.authorization
                token = self.tokens.get(authorization) if authorization is not None else None
                if authorization is not None and token is not None:
                    self.lanes.open(authorization, token, principal, plan, key, quota)

    def _known(self, authorization: bytes | None) -> _Admitted | None:
        """The common case, in plain calls: a bearer key whose principal the
        authenticator holds fresh and this route admitted before. ``None`` sends the
        request the whole way (a first request, a refusal, a cache entry due)."""
        cached = self.cached
        if authorization is None or cached is None:
            return None
        token = self.tokens.get(authorization)
        if token is None:
            token = bearer_of(authorization)
            if not token:
                return None
            if len(self.tokens) >= ADMITTED_ENTRIES:
                self.tokens.clear()
            self.tokens[authorization] = token
        principal = cached(token)
        return self._admitted(principal) if principal is not None else None

    def _admitted(self, principal: Principal) -> _Admitted | None:
        """What a request of ``principal`` counts against here, or ``None`` when this
        route refuses it. Worked out once per principal object, not per request: an
        authenticator hands out the same object while it has it cached, and a changed
        key or subscription comes back as a new one. (A scope checker answers from the
        scopes alone, so its answer for the same object is the same.)"""
        if principal.expires_at is not None and principal.expired(time.time()):
            return None
        admitted = self.admitted.get(principal.key_id)
        if admitted is None or admitted[0] is not principal:
            _, plan, refusal = self._identify(principal)
            if plan is None or refusal is not None:
                return None
            if len(self.admitted) >= ADMITTED_ENTRIES:
                self.admitted.clear()
            key = self.prefix + self._counter(principal)
            admitted = self.admitted[principal.key_id] = (
                principal,
                plan,
                key,
                self.quotas[plan.name],
            )
        return admitted

    def _checked(
        self, token: str | None, principal: Principal | None
    ) -> Principal | ApiError | None:
        """The key's principal (as the authenticator found it), ``None`` without a key,
        or why the key is refused."""
        refusals = self.access.refusals
        if not token:
            if self.access.anonymous is not None:
                return None
            missing = refusals.missing_key
            if not self.challenge and missing == DEFAULT_REFUSALS.missing_key:
                # The default names the Authorization header; this key is elsewhere.
                missing = "Missing {key}"
            return Unauthorized(self._say(missing), headers=self.challenge)
        if principal is None:
            return Unauthorized(self._say(refusals.invalid_key), headers=self.challenge)
        # The clock is read only for keys that expire.
        if principal.expires_at is not None and principal.expired(time.time()):
            return Unauthorized(self._say(refusals.expired_key), headers=self.challenge)
        return principal

    def _identify(
        self, found: Principal | ApiError | None
    ) -> tuple[Principal | None, Plan | None, ApiError | None]:
        """``(principal, plan, refusal)``: no plan when there is no usable subscription."""
        if found is None:
            return None, None, None
        if isinstance(found, ApiError):
            return None, None, found
        plan_name = found.plans.get(self.product.name)
        plan = self.plans.get(plan_name) if plan_name is not None else None
        if plan is None:
            return found, None, Forbidden(self._say(self.access.refusals.no_plan))
        return found, plan, self._refusal(found)

    def _refusal(self, principal: Principal) -> Forbidden | None:
        access, refusals = self.access, self.access.refusals
        if access.admin and not principal.is_admin:
            return Forbidden(self._say(refusals.admin_only))
        if access.scope is not None and not self.pipeline.checker.grants(
            principal.scopes, access.scope
        ):
            return Forbidden(self._say(refusals.missing_scope))
        if access.key_scope_only and (principal.scopes != {access.scope} or principal.is_admin):
            return Forbidden(self._say(refusals.key_scope_only))
        return None

    def _counter(self, principal: Principal) -> str:
        if self.access.window.per_key:
            return f"key:{principal.key_id}"
        return str(principal.account_id)

    async def _report_refused(self, scope: Scope, principal: Principal, plan: Plan) -> None:
        """A refused subscriber still learns its window, without spending it; the
        refusal stands even when the limiter cannot be reached."""
        await self._peek(scope, self.prefix + self._counter(principal), plan)

    async def _peek(self, scope: Scope, key: str, plan: Plan) -> None:
        try:
            decision = await self.limiter.peek(key, self.quotas[plan.name])
        except RateLimiterUnavailable:
            log.warning("rate limiter unreachable; answering %s without rate limit headers", key)
            return
        # Retry-After belongs to the 429 alone, even when this window is used up.
        request_state(scope).headers = decision.headers(retry_after=False)

    async def report(self, scope: Scope) -> None:
        """The caller's window, peeked, not counted, for answers admission never
        reached. They serve nothing, so they cost no quota, and nobody can spend
        another's window with them. A key the report cannot read (in the body) or
        cannot use is reported as the client address's window."""
        access = self.access
        token = None
        if access.key is not None and not access.key.reads_body:
            token = await access.key.key(Request(scope))
        found = await self.authenticator.authenticate(token) if token else None
        principal, plan, refusal = self._identify(self._checked(token, found))
        if principal is None or plan is None or refusal is not None:
            if access.anonymous is None:
                return
            counter, plan = f"ip:{self.pipeline.clients.of(scope)}", self.plans[access.anonymous]
        else:
            counter = self._counter(principal)
        await self._peek(scope, self.prefix + counter, plan)

    async def _customer(self, scope: Scope, principal: Principal) -> Customer:
        token = next((v for n, v in scope["headers"] if n == _CUSTOMER_HEADER), None)
        if not token:
            raise Unauthorized(f"Missing {CUSTOMER_HEADER}: this endpoint acts for a customer")
        assert self.pipeline.customer_tokens is not None
        tokens = await self.pipeline.customer_tokens()
        return tokens.verify(
            token.decode("latin-1"), account_id=principal.account_id, product=self.product.name
        )
