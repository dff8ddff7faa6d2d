"""The public QR API's own admission (tiers, sliding windows, client addresses) and
its rendering (blocklist, cache). One instance per gateway, built at start-up."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from litestar import Request
from litestar.types import Scope

from tollway import (
    ApiError,
    BadRequest,
    Forbidden,
    Gateway,
    TooManyRequests,
    Unauthorized,
    UnavailableForLegalReasons,
    decode_json_body,
)
from tollway.net import ClientAddress
from tollway.pipeline import RESPONSE_HEADERS, apply_failure_policy
from tollway.ratelimit import Algorithm, Decision, Quota, RateLimiterUnavailable
from tollway_code.render import RenderedImage, RenderError, render_qr
from tollway_code.schemas import QrRequest
from tollway_qr.blocklist import Blocklist
from tollway_qr.cache import CacheKey, RenderCache, cache_key, etag_of
from tollway_qr.schemas import ApiKeyField

IMAGE = "image"
JSON = "json"
ANONYMOUS = "anonymous"
"""The plan of callers without a key; limits count per client address."""
SCOPE = "qr:generate"
WINDOW = 60
SERVICE = "tollway_qr.service"
"""Key of the service in the routes' ``opt``."""
MAX_QUERY_BYTES = 32 * 1024
"""Longest query string the image API reads (414 beyond): room for the longest valid
request, 2,048 four-byte characters of ``data`` %-encoded (24 KiB), and every other
parameter. Beyond 64 KiB the server refuses the request itself, before the app sees it
(see docs/public-qr.md)."""

_BLOCKED_HELP = (
    "QR codes pointing at known phishing or malware sites are not generated. "
    "If you believe this is a mistake, contact the operator of this service."
)


class UriTooLong(ApiError):
    status_code = 414


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


class QrService:
    """What the public QR routes share: limits, the blocklist and the image cache."""

    def __init__(self, gateway: Gateway) -> None:
        settings = gateway.settings
        options: dict[str, Any] = settings.product("qr").settings
        self._limiter = gateway.rate_limiter
        self._authenticator = gateway.authenticator
        self._failure_policy = settings.rate_limit_failure
        self._on_limiter_error = gateway.metrics.count_limiter_error
        self._clients = ClientAddress(settings.trusted_proxies)
        self._plans = gateway.plans["qr"]
        self._quotas = {
            (plan.name, kind): Quota(
                plan.limits[f"{kind}_per_minute"], WINDOW, Algorithm.SLIDING_WINDOW, kind
            )
            for plan in self._plans.values()
            for kind in (IMAGE, JSON)
        }
        self.blocklist = Blocklist.load(
            options.get("blocklists", []), include_default=options.get("default_blocklist", True)
        )
        self.cache = RenderCache(int(options.get("cache_bytes", 64 * 1024 * 1024)))

    def __deepcopy__(self, memo: dict[int, Any]) -> QrService:
        # Litestar deep-copies route options; the routes share this one service.
        return self

    async def admit(self, scope: Scope, kind: str, api_key: str | None) -> None:
        """Count the request against its tier's sliding window; refuse over the limit,
        or for a key that may not be used here (unknown keys count per address)."""
        plan, key, refusal = await self._window(scope, kind, api_key)
        decision = await self._hit(key, self._quotas[(plan, kind)])
        if decision is not None:
            scope["state"][RESPONSE_HEADERS] = decision.headers()
            if not decision.allowed:
                raise self._too_many(decision, plan, kind)
        if refusal is not None:
            raise refusal

    async def report(self, scope: Scope) -> None:
        """The route's ``report`` step: the caller's window, peeked, not counted, for
        answers admission never reached (405, 414, a body too large, ``OPTIONS``).
        They render nothing, so they cost no quota, and nobody can spend another's
        window with them. The window is that of the path's API, of the ``api_key`` in
        the query string when it is a usable key, else of the client address."""
        kind = JSON if scope["path"].rstrip("/").endswith("/json") else IMAGE
        api_key = Request(scope).query_params.get("api_key")
        plan, key, _ = await self._window(scope, kind, api_key)
        try:
            decision = await self._limiter.peek(key, self._quotas[(plan, kind)])
        except RateLimiterUnavailable:
            return  # answered without headers, as admission does under the open policy
        # Retry-After belongs to the 429 alone, even when this window is used up.
        scope["state"][RESPONSE_HEADERS] = decision.headers(retry_after=False)

    async def _window(
        self, scope: Scope, kind: str, api_key: str | None
    ) -> tuple[str, str, ApiError | None]:
        """The plan, limiter key and refusal (if any) of a request to the ``kind`` API."""
        plan, counter, refusal = await self._tier(api_key)
        if counter is None:
            counter = f"ip:{self._clients.of(scope)}"
        return plan, f"qr:{kind}:{counter}", refusal

    async def _tier(self, api_key: str | None) -> tuple[str, str | None, ApiError | None]:
        if not api_key:
            return ANONYMOUS, None, None
        principal = await self._authenticator.authenticate(api_key)
        if principal is None or principal.expired(time.time()):
            return ANONYMOUS, None, Unauthorized("api_key is unknown, revoked or expired")
        plan = principal.plans.get("qr")
        if plan is None or plan not in self._plans or SCOPE not in principal.scopes:
            return ANONYMOUS, None, Forbidden("This api_key has no public QR API plan")
        if principal.scopes != {SCOPE} or principal.is_admin:
            return (
                ANONYMOUS,
                None,
                Forbidden(
                    f"Keys used in URLs must be limited to the public QR API (scope '{SCOPE}' "
                    "only), so a leaked URL exposes nothing else; create one for this use"
                ),
            )
        return plan, f"key:{principal.key_id}", None

    async def _hit(self, key: str, quota: Quota) -> Decision | None:
        return await apply_failure_policy(
            self._limiter.hit(key, quota),
            self._failure_policy,
            key,
            on_unavailable=self._on_limiter_error,
        )

    def _too_many(self, decision: Decision, plan: str, kind: str) -> TooManyRequests:
        if plan == ANONYMOUS:
            free = self._plans["free"].limits[f"{kind}_per_minute"] if "free" in self._plans else 0
            hint = f"Send an api_key for higher limits (free keys: {free} per minute)"
        else:
            hint = f"Retry after {decision.retry_after} s or move to a higher plan"
        return TooManyRequests(
            f"Rate limit of {decision.limit} requests per {WINDOW} s exceeded",
            extra={"hint": hint, "resetAt": iso(decision.reset_at)},
        )

    def refuse_blocked(self, data: str) -> None:
        match = self.blocklist.check(data)
        if match is not None:
            raise UnavailableForLegalReasons(
                "This content cannot be encoded",
                extra={"reason": match.reason, "help": _BLOCKED_HELP},
            )

    def identify(self, request: QrRequest) -> tuple[CacheKey, str]:
        """The image's cache key and ETag, refusing blocked content (451) first.

        Cheap: a conditional request that matches is answered without rendering.
        """
        key = cache_key(request)
        # A cached image passed the (immutable) blocklist when it was rendered.
        if self.cache.get(key, count=False) is None:
            self.refuse_blocked(request.data)
        return key, etag_of(key)

    def render(self, request: QrRequest, key: CacheKey) -> RenderedImage:
        """The image from the cache, or rendered (400 when the data does not fit)."""
        image = self.cache.get(key)
        if image is None:
            try:
                image = render_qr(request)
            except RenderError as error:
                raise BadRequest(str(error)) from None
            self.cache.put(key, image)
        return image


def service_of(request: Request[Any, Any, Any]) -> QrService:
    service: QrService = request.route_handler.opt[SERVICE]
    return service


async def admit_image(request: Request[Any, Any, Any]) -> None:
    """Admission step of ``GET`` and ``HEAD /api/qr``: the key is a query parameter.
    A query string too long for any valid request is refused first (414, reported by
    the route's ``report`` step, not counted)."""
    if len(request.scope["query_string"]) > MAX_QUERY_BYTES:
        raise UriTooLong(
            f"The query string is longer than {MAX_QUERY_BYTES} bytes; "
            "data is at most 2048 characters"
        )
    await service_of(request).admit(request.scope, IMAGE, request.query_params.get("api_key"))


async def admit_json(request: Request[Any, Any, Any]) -> None:
    """Admission step of ``POST /api/qr/json``: the key is a body field, read before
    the body is validated so that invalid requests are counted too."""
    try:
        api_key = decode_json_body(await request.body(), ApiKeyField).api_key
    except BadRequest:
        api_key = None  # the body check that follows answers 400
    await service_of(request).admit(request.scope, JSON, api_key)
