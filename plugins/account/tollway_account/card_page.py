"""The hosted "Save a card" page, ``/account/cards/<session id>``: a card form, and
saving the card as the account's default.

The kit (:mod:`tollway.billing.hosted`) serves it as it serves every hosted card
page: no key, visitors counted per client address (the ``anonymous`` plan's
``cards_per_minute``), HTML answers that are never cached, framed or followed by a
Referer, and a ``POST`` accepted only from the form the page rendered (its
``account_cards_csrf`` nonce cookie and token signed with the deployment's
``account_card_forms`` secret).

What is the account product's: saving asks the processor first (SQLite has one
writer, and the processor writes in a transaction of its own), then keeps the card
on the ``platform`` ledger as the account's default and marks the session used, in
one transaction. The account's unpaid invoices are then tried at once with the new
card, and the page answers 303 to the session's ``return_url``, or says itself which
card was saved. A declined or invalid card shows the form again with the processor's
message (422) and nothing is saved. A session used already, or expired, is a 410 page.
"""

from __future__ import annotations

from typing import Any

from litestar.response.base import ASGIResponse

from tollway import Conflict, Gateway, utcnow, visitor_access
from tollway.billing import TENANT, CardDetails, PaymentMethod
from tollway.billing.hosted import (
    DEPENDENCY,
    HostedCardPage,
    card_form,
    card_page_routes,
    message_page,
    page,
    redirect,
)
from tollway_account import card_sessions
from tollway_account.card_sessions import OpenCardSession
from tollway_account.product import ANONYMOUS, CARDS, LEDGER

COOKIE = "account_cards_csrf"
TITLE = "Save a card"
HEADING = (
    f"<h1>{TITLE}</h1><p>The card becomes the default card for your account's subscriptions.</p>"
)
SAVE = "Save card"
"""The form's button."""
CARDS_OF = {
    "visa": "Visa card",
    "mastercard": "Mastercard",
    "amex": "American Express card",
    "discover": "Discover card",
}
"""A saved card as the page names it, by brand; a card of another network is "card"."""


class CardPage(HostedCardPage[OpenCardSession]):
    """Shows "Save a card" sessions and saves their cards (a service: one per gateway)."""

    NOT_FOUND = message_page(
        "Page not found",
        "This link to save a card is not valid. Start again from your account's billing.",
    )
    UNREADABLE = message_page(
        "Form not sent", "The card form could not be read. Go back and send it again."
    )

    def __init__(self, gateway: Gateway) -> None:
        super().__init__(gateway, cookie=COOKIE, prefix=CARDS.prefix, secret="account_card_forms")

    async def find(self, session_id: str) -> OpenCardSession | None:
        return await card_sessions.find(self.gateway.database.reads, session_id)

    def closed(self, found: OpenCardSession, *, posted: bool) -> ASGIResponse | None:
        """A used or expired session's page (410), to a ``GET`` as to a ``POST``."""
        state = found.state(utcnow())
        if state == "saved":
            return _used(found)
        if state == "expired":
            shown = message_page(
                "Link expired",
                "This link to save a card has expired. Start again from your account's billing.",
                _back(found, "Go back"),
            )
            return page(shown, 410)
        return None

    def form(
        self, found: OpenCardSession, *, csrf_token: str, error: str | None, name_on_card: str
    ) -> bytes:
        return card_form(
            TITLE,
            HEADING,
            button=SAVE,
            back=_back(found, "Cancel and go back"),
            csrf_token=csrf_token,
            error=error,
            name_on_card=name_on_card,
        )

    def onward(self, found: OpenCardSession) -> str | None:
        return found.return_url

    def forged(self, session_id: str) -> bytes:
        return message_page(
            "Form expired",
            "This card form could not be verified: it may be open in another window, or "
            "come from another site. Open the page again and retry. Nothing was saved.",
            (f"{CARDS.prefix}/{session_id}", "Open the page again"),
        )

    async def submit(
        self, session_id: str, found: OpenCardSession, details: CardDetails
    ) -> ASGIResponse:
        """Save the card as the account's default and mark the session used, in one
        transaction (:class:`~tollway.billing.CardError` saves nothing); then try the
        account's unpaid invoices with it."""
        billing = self.gateway.billing
        try:
            async with self.gateway.database.transaction() as session:
                if not await card_sessions.claim(session, found.id_hash):
                    raise Conflict("this page saved a card meanwhile")
                wallet = billing.wallet(session, LEDGER, found.account_id)
                method = await wallet.add(TENANT, details, default=True)
                if not await card_sessions.complete(session, found.id_hash, method.id, utcnow()):
                    raise Conflict("this page saved a card meanwhile")
        except Conflict:
            return _used(found)
        await billing.collect(LEDGER, found.account_id, TENANT)
        if found.return_url is not None:
            return redirect(found.return_url)
        return page(_saved(method), 200)


def _back(found: OpenCardSession, label: str) -> tuple[str, str] | None:
    """The link back to ``return_url``, if the session has one."""
    return (found.return_url, label) if found.return_url is not None else None


def _used(found: OpenCardSession) -> ASGIResponse:
    shown = message_page(
        "Card already saved",
        "A card was saved with this link already. Start again to save another.",
        _back(found, "Continue"),
    )
    return page(shown, 410)


def _saved(method: PaymentMethod) -> bytes:
    """What the page says once the card is saved: its brand and last four digits."""
    named = CARDS_OF.get(method.brand, "card")
    return message_page(
        "Card saved",
        f"Your {named} ending in {method.last4} is now the default card for your "
        "account's subscriptions.",
    )


ACCESS = visitor_access(ANONYMOUS, "cards_per_minute", counter="cards", what="card page requests")
CARD_PAGE_ROUTES = card_page_routes(ACCESS)
CARD_PAGE_DEPENDENCIES: dict[str, Any] = {DEPENDENCY: CardPage}
CARD_PAGE_SERVICES: tuple[type[Any], ...] = (CardPage,)
"""Constructed with the gateway (``tollway_register_services``): the dependency above
is the gateway's one instance."""
