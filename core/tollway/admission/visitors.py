"""Keyless pages and redirects: every request on the product's visitors' plan, counted
per client address."""

from __future__ import annotations

from typing import Any

from tollway.admission.access import Access, Refusals, Window
from tollway.errors import ApiError, TooManyRequests
from tollway.ratelimit import Algorithm, Decision
from tollway.registry import Plan, Product


def visitor_access(anonymous: str, limit: str, *, counter: str, what: str) -> Access:
    """No key: every visitor is on the product's ``anonymous`` plan, counted per client
    address (``trusted_proxies`` as everywhere) in a 60-second sliding window of the
    plan's ``limit``, and told "Too many ``what`` from your address (N a minute); retry
    after S s" when over it (``what``: ``redirects``, ``checkout requests``...)."""

    def too_many(decision: Decision, product: Product, plan: Plan, plans: Any) -> ApiError:
        return TooManyRequests(
            f"Too many {what} from your address ({decision.limit} a minute); "
            f"retry after {decision.retry_after} s"
        )

    return Access(
        key=None,
        anonymous=anonymous,
        window=Window(limit, 60, Algorithm.SLIDING_WINDOW, counter=counter),
        refusals=Refusals(too_many=too_many),
    )
