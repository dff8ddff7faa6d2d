"""A hosted card page's flow, once for every product with one: showing its form,
and what a posted form meets before the product does something with the card.

A product subclasses :class:`HostedCardPage` with what is its own (its sessions, what
the form is for, what happens to the card, the wording of its refusals); the kit
answers everything else the same way on every page: an unknown session is a 404 page,
a body that is not the page's form a 400/413/415 page, a form the page did not render
(:class:`~tollway.billing.hosted.FormGuard`) a 403 page, and a card the form does not
describe, or that the processor refuses (:class:`~tollway.billing.CardError`), the
form again with the reason (422) and the name typed, never the number.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from litestar import Request
from litestar.response.base import ASGIResponse
from litestar.status_codes import HTTP_200_OK, HTTP_403_FORBIDDEN, HTTP_404_NOT_FOUND

from tollway.billing.hosted.form import Unreadable, card, name_on_card, read_form
from tollway.billing.hosted.guard import FormGuard
from tollway.billing.hosted.responses import form_action, page
from tollway.billing.processor import CardDetails, CardError
from tollway.net import PublicOrigin

if TYPE_CHECKING:
    from tollway.gateway import Gateway

FORM_REFUSED = 422


class CardSession(Protocol):
    """What the kit reads of a product's session."""

    @property
    def id_hash(self) -> str: ...

    @property
    def expires_at(self) -> datetime: ...


S = TypeVar("S", bound=CardSession)


class HostedCardPage(ABC, Generic[S]):
    """One product's card page at ``<prefix>/<session id>`` (a service: one per
    gateway): its forms guarded by the nonce cookie ``cookie`` and tokens signed with
    the deployment secret ``secret`` (:class:`~tollway.billing.hosted.FormGuard`)."""

    NOT_FOUND: ClassVar[bytes]
    """The page of an unknown session."""
    UNREADABLE: ClassVar[bytes]
    """The page of a body that is not the form."""

    def __init__(self, gateway: Gateway, *, cookie: str, prefix: str, secret: str) -> None:
        self.gateway = gateway
        origin = PublicOrigin(gateway.settings.trusted_proxies)
        self.guard = FormGuard(
            gateway.database, origin, cookie=cookie, prefix=prefix, secret=secret
        )

    @abstractmethod
    async def find(self, session_id: str) -> S | None:
        """The session of ``session_id``, ``None`` for an unknown one."""

    @abstractmethod
    def closed(self, found: S, *, posted: bool) -> ASGIResponse | None:
        """The answer of a session whose form is not shown (completed, expired...),
        to a ``GET`` or to a ``POST`` of a form the page rendered; ``None`` when it is
        open."""

    @abstractmethod
    def form(self, found: S, *, csrf_token: str, error: str | None, name_on_card: str) -> bytes:
        """The page with the card form (:func:`~tollway.billing.hosted.card_form`)."""

    @abstractmethod
    def onward(self, found: S) -> str | None:
        """Where a completed form may send the browser (303), named in the form's
        ``form-action``; ``None`` when it stays on this origin."""

    @abstractmethod
    def forged(self, session_id: str) -> bytes:
        """The page of a form the page did not render, linking to the page again."""

    @abstractmethod
    async def submit(self, session_id: str, found: S, details: CardDetails) -> ASGIResponse:
        """Do the product's work with the card; :class:`~tollway.billing.CardError`
        shows the form again with its message."""

    async def show(self, scope: Any, session_id: str) -> ASGIResponse:
        found = await self.find(session_id)
        if found is None:
            return page(self.NOT_FOUND, HTTP_404_NOT_FOUND)
        closed = self.closed(found, posted=False)
        if closed is not None:
            return closed
        nonce = self.guard.nonce(scope)
        return await self._form(scope, session_id, found, nonce, None, "", HTTP_200_OK)

    async def post(self, request: Request[Any, Any, Any], session_id: str) -> ASGIResponse:
        scope = request.scope
        found = await self.find(session_id)
        if found is None:
            return page(self.NOT_FOUND, HTTP_404_NOT_FOUND)
        try:
            fields = await read_form(request)
        except Unreadable as unreadable:
            return page(self.UNREADABLE, unreadable.status)
        nonce = await self.guard.verified_nonce(scope, found.id_hash, fields)
        if nonce is None:
            return page(self.forged(session_id), HTTP_403_FORBIDDEN)
        closed = self.closed(found, posted=True)
        if closed is not None:
            return closed
        name = name_on_card(fields)
        typed = card(fields)
        if isinstance(typed, str):
            return await self._form(scope, session_id, found, nonce, typed, name, FORM_REFUSED)
        try:
            return await self.submit(session_id, found, typed)
        except CardError as refused:
            return await self._form(
                scope, session_id, found, nonce, refused.message, name, FORM_REFUSED
            )

    async def _form(
        self,
        scope: Any,
        session_id: str,
        found: S,
        nonce: str,
        error: str | None,
        name: str,
        status: int,
    ) -> ASGIResponse:
        token = await self.guard.token(found.id_hash, nonce)
        body = self.form(found, csrf_token=token, error=error, name_on_card=name)
        cookie = self.guard.set_cookie(scope, session_id, nonce, found.expires_at)
        return page(body, status, form_action(self.onward(found)), [cookie])
