"""The hosted checkout page, ``/checkout/<session id>``: a card form, and paying it.

The kit (:mod:`tollway.billing.hosted`) serves it as it serves every hosted card
page: no key, visitors counted per client address (the ``anonymous`` plan's
``checkout_per_minute``), HTML answers that are never cached, framed or followed by a
Referer, and a ``POST`` accepted only from the form the page rendered (its
``checkout_csrf`` nonce cookie and token signed with the deployment's
``launchpad_checkout_forms`` secret). The form's ``form-action`` allows the redirect
to the success URL's origin.

What is launchpad's: paying calls the billing engine's ``subscribe`` before anything
else is written (SQLite has one writer, and the processor writes first in a
transaction of its own), then marks the session paid in the same transaction and
answers 303 to ``success_url``. A declined or invalid card shows the form again with
the processor's message (422) and nothing is written. A second ``POST`` (a double
click) finds the session paid, or loses the race on the engine's one live
subscription per customer (409), and is sent to ``success_url`` like the first.
"""

from __future__ import annotations

from typing import Any

from litestar.response.base import ASGIResponse

from tollway import Conflict, Gateway, utcnow, visitor_access
from tollway.billing import CardDetails, Terms
from tollway.billing.hosted import (
    DEPENDENCY,
    HostedCardPage,
    card_page_routes,
    message_page,
    page,
    redirect,
)
from tollway_launchpad import checkout_sessions
from tollway_launchpad.checkout_sessions import OpenSession
from tollway_launchpad.page_html import Offer, checkout_form
from tollway_launchpad.product import ANONYMOUS, CHECKOUT, LEDGER
from tollway_launchpad.settings import LaunchpadSettings

COOKIE = "checkout_csrf"


class CheckoutPage(HostedCardPage[OpenSession]):
    """Shows and pays checkout sessions (a service: one per gateway)."""

    NOT_FOUND = message_page(
        "Checkout not found",
        "This checkout link is not valid. Go back to where you came from and start again.",
    )
    UNREADABLE = message_page(
        "Form not sent", "The payment form could not be read. Go back and send it again."
    )

    def __init__(self, gateway: Gateway) -> None:
        super().__init__(
            gateway, cookie=COOKIE, prefix=CHECKOUT.prefix, secret="launchpad_checkout_forms"
        )
        self.currency = gateway.product_settings(LaunchpadSettings).currency

    async def find(self, session_id: str) -> OpenSession | None:
        return await checkout_sessions.find(self.gateway.database.reads, session_id)

    def closed(self, found: OpenSession, *, posted: bool) -> ASGIResponse | None:
        """A paid session's page (410), or, to its form posted again, 303 to
        ``success_url``; an expired or withdrawn session's page (410)."""
        state = found.state(utcnow())
        if state == "paid":
            if posted:
                return redirect(found.success_url)
            shown = message_page(
                "Already paid", "This checkout has been paid.", (found.success_url, "Continue")
            )
        elif state == "expired":
            shown = message_page(
                "Checkout expired",
                "This checkout link has expired. Go back and start again.",
                (found.cancel_url, "Go back"),
            )
        elif state == "withdrawn":
            shown = message_page(
                "Checkout no longer available",
                "This plan can no longer be bought here.",
                (found.cancel_url, "Go back"),
            )
        else:
            return None
        return page(shown, 410)

    def form(
        self, found: OpenSession, *, csrf_token: str, error: str | None, name_on_card: str
    ) -> bytes:
        offer = Offer(
            plan_name=found.plan_name,
            amount_cents=found.amount_cents,
            currency=self.currency,
            interval=found.billing_interval,
            trial_days=found.trial_days,
            features=found.features,
            cancel_url=found.cancel_url,
        )
        return checkout_form(offer, csrf_token=csrf_token, error=error, name_on_card=name_on_card)

    def onward(self, found: OpenSession) -> str:
        return found.success_url

    def forged(self, session_id: str) -> bytes:
        return message_page(
            "Form expired",
            "This payment form could not be verified: it may be open in another window, or "
            "come from another site. Open the checkout again and retry. Nothing was charged.",
            (f"{CHECKOUT.prefix}/{session_id}", "Open the checkout again"),
        )

    async def submit(
        self, session_id: str, found: OpenSession, details: CardDetails
    ) -> ASGIResponse:
        """Subscribe the session's customer, then mark the session paid, in one
        transaction; :class:`~tollway.billing.CardError` or :class:`~tollway.Conflict`
        roll it all back."""
        terms = Terms(
            plan=str(found.plan_id),
            plan_name=found.plan_slug,
            interval=found.billing_interval,
            amount_cents=found.amount_cents,
            trial_days=found.trial_days,
        )
        try:
            async with self.gateway.database.transaction() as session:
                book = self.gateway.billing.book(session, LEDGER, found.account_id)
                subscription = await book.subscribe(str(found.customer_id), terms, card=details)
                if not await checkout_sessions.complete(
                    session, found.id_hash, subscription.id, utcnow()
                ):
                    raise Conflict("this checkout was paid meanwhile")
        except Conflict:
            return await self._after_conflict(session_id)
        return redirect(found.success_url)

    async def _after_conflict(self, session_id: str) -> ASGIResponse:
        """A payment refused because the customer has a live subscription: this
        session's own (paid by a request that ran beside this one), or another's."""
        again = await self.find(session_id)
        if again is not None and again.completed_at is not None:
            return redirect(again.success_url)
        cancel_url = again.cancel_url if again is not None else None
        shown = message_page(
            "Already subscribed",
            "You already have a subscription, so this checkout cannot be paid.",
            (cancel_url, "Go back") if cancel_url else None,
        )
        return page(shown, 409)


ACCESS = visitor_access(
    ANONYMOUS, "checkout_per_minute", counter="checkout", what="checkout requests"
)
PAGE_ROUTES = card_page_routes(ACCESS)
PAGE_DEPENDENCIES: dict[str, Any] = {DEPENDENCY: CheckoutPage}
