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

from tollway.admission import Access
from tollway.billing.hosted.form import PaymentOperation
from tollway.billing.hosted.page import HostedCardPage

DEPENDENCY = "card_page"
"""The name a product registers its :class:`HostedCardPage` service under."""

SessionId = Annotated[str, PathParameter(description="The session's id, its page's last segment.")]


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
