"""How the public QR API lets requests in: tiers, sliding windows, client addresses.

Composed from the core's admission steps (see :class:`tollway.Access`): the key comes
from the query string (image API) or the body (JSON API) and is optional; without one
a request is on the ``anonymous`` tier, counted per client address. A key used here
must hold the ``qr:generate`` scope alone, since it travels in URLs. Every answer,
refusals included, carries the caller's window (``report=True``). The wording of the
refusals is the spec's.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from litestar import Request

from tollway import (
    Access,
    Algorithm,
    ApiError,
    BodyKey,
    Decision,
    Plan,
    Product,
    QueryKey,
    Refusals,
    TooManyRequests,
    Window,
)

ANONYMOUS = "anonymous"
"""The plan of callers without a key; limits count per client address."""
SCOPE = "qr:generate"
WINDOW = 60
MAX_QUERY_BYTES = 32 * 1024
"""Longest query string the image API reads (414 beyond): room for the longest valid
request, 2,048 four-byte characters of ``data`` %-encoded (24 KiB), and every other
parameter. Beyond 64 KiB the server refuses the request itself, before the app sees it
(see docs/public-qr.md)."""


class UriTooLong(ApiError):
    status_code = 414


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def _too_many(
    decision: Decision, product: Product, plan: Plan, plans: Mapping[str, Plan]
) -> ApiError:
    if plan.name == ANONYMOUS:
        limit = f"{decision.policy}_per_minute"
        free = plans["free"].limits[limit] if "free" in plans else 0
        hint = f"Send an api_key for higher limits (free keys: {free} per minute)"
    else:
        hint = f"Retry after {decision.retry_after} s or move to a higher plan"
    return TooManyRequests(
        f"Rate limit of {decision.limit} requests per {WINDOW} s exceeded",
        extra={"hint": hint, "resetAt": iso(decision.reset_at)},
    )


_NO_PLAN = "This api_key has no public QR API plan"

REFUSALS = Refusals(
    invalid_key="api_key is unknown, revoked or expired",
    expired_key="api_key is unknown, revoked or expired",
    no_plan=_NO_PLAN,
    missing_scope=_NO_PLAN,
    key_scope_only=(
        f"Keys used in URLs must be limited to the public QR API (scope '{SCOPE}' "
        "only), so a leaked URL exposes nothing else; create one for this use"
    ),
    too_many=_too_many,
)


async def refuse_long_query(request: Request[Any, Any, Any]) -> None:
    """A query string too long for any valid request is refused before it is counted
    (414, with the caller's window reported)."""
    if len(request.scope["query_string"]) > MAX_QUERY_BYTES:
        raise UriTooLong(
            f"The query string is longer than {MAX_QUERY_BYTES} bytes; "
            "data is at most 2048 characters"
        )


def _access(kind: str, **how: Any) -> Access:
    return Access(
        anonymous=ANONYMOUS,
        scope=SCOPE,
        key_scope_only=True,
        window=Window(
            f"{kind}_per_minute", WINDOW, Algorithm.SLIDING_WINDOW, counter=kind, per_key=True
        ),
        report=True,
        refusals=REFUSALS,
        **how,
    )


IMAGE = _access("image", key=QueryKey("api_key"), check=refuse_long_query)
"""``GET``/``HEAD /api/qr``: the key is a query parameter."""
JSON = _access("json", key=BodyKey("api_key"))
"""``POST /api/qr/json``: the key is a body field."""
