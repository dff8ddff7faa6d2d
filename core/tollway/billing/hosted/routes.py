"""A hosted card page's routes: ``GET`` and ``POST`` of ``<prefix>/<session id>``,
keyless (the session id in the URL is the credential), each visitor counted per client
address."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, get, post
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import PathParameter
from litestar.response.base import ASGIResponse
from litestar.status_codes import HTTP_303_SEE_OTHER

from tollway.admission import Access, Refusals, Window
from tollway.billing.hosted.form import PaymentOperation
from tollway.billing.hosted.page import HostedCardPage
from tollway.errors import ApiError, TooManyRequests
from tollway.ratelimit import Algorithm, Decision
from tollway.registry import Plan, Product

DEPENDENCY = "card_page"
"""The name a product registers its :class:`HostedCardPage` service under."""

SessionId = Annotated[str, PathParameter(description="The session's id, its page's last segment.")]


def visitor_access(anonymous: str, limit: str, *, counter: str, what: str) -> Access:
    """No key: every visitor is on the product's ``anonymous`` plan, counted per client
    address in a 60-second sliding window of its ``limit``, told "Too many ``what``
    requests from your address" when over it."""

    def too_many(decision: Decision, product: Product, plan: Plan, plans: Any) -> ApiError:
        return TooManyRequests(
            f"Too many {what} requests from your address ({decision.limit} a minute); "
            f"retry after {decision.retry_after} s"
        )

    return Access(
        key=None,
        anonymous=anonymous,
        window=Window(limit, 60, Algorithm.SLIDING_WINDOW, counter=counter),
        refusals=Refusals(too_many=too_many),
    )


def card_page_routes(access: Access) -> list[HTTPRouteHandler]:
    """The page's two routes, admitted by ``access``, answered by the product's
    :class:`HostedCardPage` (its dependency :data:`DEPENDENCY`)."""

    @get("/{session_id:str}", access=access, media_type="text/html")
    async def show_card_page(
        request: Request[Any, Any, Any],
        session_id: SessionId,
        card_page: NamedDependency[HostedCardPage[Any]],
    ) -> ASGIResponse:
        """The card form; 404 for an unknown session, 410 for a completed or expired one."""
        return await card_page.show(request.scope, session_id)

    @post(
        "/{session_id:str}",
        access=access,
        media_type="text/html",
        status_code=HTTP_303_SEE_OTHER,
        operation_class=PaymentOperation,
    )
    async def post_card_page(
        request: Request[Any, Any, Any],
        session_id: SessionId,
        card_page: NamedDependency[HostedCardPage[Any]],
    ) -> ASGIResponse:
        """303 onward once the card is used; the form again with the processor's
        message (422) when it is refused."""
        return await card_page.post(request, session_id)

    return [show_card_page, post_card_page]
