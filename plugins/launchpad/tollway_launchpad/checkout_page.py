"""The hosted checkout page, ``/checkout/<session id>``: a card form, and paying it.

No key: the session id in the URL is the credential, and visitors are counted per
client address (the ``anonymous`` plan's ``checkout_per_minute``). Every answer of
the page's own is HTML (or a 303), ``Cache-Control: no-store``, never framed
(``X-Frame-Options: DENY``, ``frame-ancestors 'none'``), sends no Referer onward, and
carries a Content-Security-Policy allowing nothing but its inline style and posting
the form to itself (and the redirect after it to the success URL's origin, which
Chromium checks against ``form-action`` too).

A ``POST`` pays only with the form its page rendered: the page sets a random nonce in
a cookie (``HttpOnly``, ``SameSite=Strict``, ``Path=/checkout/<id>``) and puts
HMAC(deployment secret, session + nonce) in a hidden field; a request without the
pair, or one a browser marks as coming from another site (``Sec-Fetch-Site``, else
``Origin``), gets a 403 page. Paying calls the billing engine's ``subscribe`` before
anything else is written (SQLite has one writer, and the processor writes first in a
transaction of its own), then marks the session paid in the same transaction and
answers 303 to ``success_url``. A declined or invalid card shows the form again with
the processor's message (422) and nothing is written. A second ``POST`` (a double
click) finds the session paid, or loses the race on the engine's one live
subscription per customer (409), and is sent to ``success_url`` like the first.
"""

from __future__ import annotations

import base64
import hmac
import re
import secrets
from typing import Annotated, Any
from urllib.parse import urlsplit

from litestar import Request, get, post
from litestar.di import NamedDependency
from litestar.params import PathParameter
from litestar.response.base import ASGIResponse
from litestar.status_codes import HTTP_200_OK, HTTP_303_SEE_OTHER

from tollway import (
    Access,
    Algorithm,
    ApiError,
    Conflict,
    Decision,
    Gateway,
    Plan,
    Product,
    PublicOrigin,
    Refusals,
    TooManyRequests,
    Window,
    deployment_secret,
    utcnow,
)
from tollway.billing import CardDetails, CardError, Terms
from tollway_launchpad.checkout_sessions import OpenSession, State, complete, find
from tollway_launchpad.page_html import STYLE_SOURCE, Offer, checkout_form, message_page
from tollway_launchpad.payment_form import PaymentOperation, Unreadable, card, read_form
from tollway_launchpad.product import ANONYMOUS, CHECKOUT, LEDGER
from tollway_launchpad.settings import LaunchpadSettings

COOKIE = "checkout_csrf"
NONCE = re.compile(r"[A-Za-z0-9_-]{22}")
"""A cookie's nonce: ``secrets.token_urlsafe(16)``."""
SAME_ORIGIN = frozenset({"same-origin", "none"})
"""``Sec-Fetch-Site`` values of a request this page's own form (or the customer,
``none``) made; ``same-site`` and ``cross-site`` ones are refused."""

NOT_FOUND = message_page(
    "Checkout not found",
    "This checkout link is not valid. Go back to where you came from and start again.",
)
UNREADABLE = message_page(
    "Form not sent", "The payment form could not be read. Go back and send it again."
)


def _too_many(decision: Decision, product: Product, plan: Plan, plans: Any) -> ApiError:
    return TooManyRequests(
        f"Too many checkout requests from your address ({decision.limit} a minute); "
        f"retry after {decision.retry_after} s"
    )


ACCESS = Access(
    key=None,
    anonymous=ANONYMOUS,
    window=Window("checkout_per_minute", 60, Algorithm.SLIDING_WINDOW, counter="checkout"),
    refusals=Refusals(too_many=_too_many),
)


class CheckoutPage:
    """Shows and pays checkout sessions (a service: one per gateway)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.currency = gateway.product_settings(LaunchpadSettings).currency
        self.origin = PublicOrigin(gateway.settings.trusted_proxies)
        self._key: bytes | None = None

    async def _form_key(self) -> bytes:
        """The deployment's secret the forms' tokens are signed with (every process
        shares it, so any one of them accepts a form another rendered)."""
        if self._key is None:
            secret = await deployment_secret(self.gateway.database, "launchpad_checkout_forms")
            self._key = secret.encode()
        return self._key

    async def _token(self, found: OpenSession, nonce: str) -> str:
        digest = hmac.digest(await self._form_key(), f"{found.id_hash}.{nonce}".encode(), "sha256")
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    async def show(self, scope: Any, session_id: str) -> ASGIResponse:
        found = await find(self.gateway.database.reads, session_id)
        if found is None:
            return _page(NOT_FOUND, 404)
        refused = _unpayable(found, found.state(utcnow()))
        if refused is not None:
            return refused
        nonce = _cookie(scope) or secrets.token_urlsafe(16)
        return await self._form(scope, session_id, found, nonce, None, "", HTTP_200_OK)

    async def _form(
        self,
        scope: Any,
        session_id: str,
        found: OpenSession,
        nonce: str,
        error: str | None,
        name_on_card: str,
        status: int,
    ) -> ASGIResponse:
        offer = Offer(
            plan_name=found.plan_name,
            amount_cents=found.amount_cents,
            currency=self.currency,
            interval=found.billing_interval,
            trial_days=found.trial_days,
            features=found.features,
            cancel_url=found.cancel_url,
        )
        body = checkout_form(
            offer,
            csrf_token=await self._token(found, nonce),
            error=error,
            name_on_card=name_on_card,
        )
        seconds = max(1, int((found.expires_at - utcnow()).total_seconds()))
        cookie = (
            f"{COOKIE}={nonce}; Path={CHECKOUT.prefix}/{session_id}; Max-Age={seconds}; "
            "HttpOnly; SameSite=Strict"
        )
        if self.origin.of(scope).startswith("https:"):
            cookie += "; Secure"
        form_action = f"'self' {_origin(found.success_url)}"
        return _page(body, status, form_action, [("set-cookie", cookie)])

    async def pay(self, request: Request[Any, Any, Any], session_id: str) -> ASGIResponse:
        scope = request.scope
        found = await find(self.gateway.database.reads, session_id)
        if found is None:
            return _page(NOT_FOUND, 404)
        try:
            form = await read_form(request, _header(scope, b"content-type") or "")
        except Unreadable as unreadable:
            return _page(UNREADABLE, unreadable.status)
        nonce = _cookie(scope)
        if not (self._from_this_page(scope) and nonce and await self._signed(found, nonce, form)):
            return _page(_forged(session_id), 403)
        state = found.state(utcnow())
        if state == "paid":
            return _redirect(found.success_url)
        refused = _unpayable(found, state)
        if refused is not None:
            return refused
        name = form.get("name", "").strip()[:200]
        typed = card(form)
        if isinstance(typed, str):
            return await self._form(scope, session_id, found, nonce, typed, name, 422)
        try:
            await self._subscribe(found, typed)
        except CardError as declined:
            return await self._form(scope, session_id, found, nonce, declined.message, name, 422)
        except Conflict:
            return await self._after_conflict(session_id)
        return _redirect(found.success_url)

    async def _signed(self, found: OpenSession, nonce: str, form: dict[str, str]) -> bool:
        expected = (await self._token(found, nonce)).encode()
        return hmac.compare_digest(expected, form.get("csrf_token", "").encode())

    def _from_this_page(self, scope: Any) -> bool:
        """Whether the browser says the request came from this origin: its
        ``Sec-Fetch-Site``, else its ``Origin`` (``null``, as the page's own form sends
        it under ``Referrer-Policy: no-referrer``, says nothing); the token decides."""
        site = _header(scope, b"sec-fetch-site")
        if site is not None:
            return site.lower() in SAME_ORIGIN
        origin = _header(scope, b"origin") or "null"
        return origin in ("null", self.origin.of(scope))

    async def _subscribe(self, found: OpenSession, details: CardDetails) -> None:
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
        async with self.gateway.database.transaction() as session:
            book = self.gateway.billing.book(session, LEDGER, found.account_id)
            subscription = await book.subscribe(str(found.customer_id), terms, card=details)
            if not await complete(session, found.id_hash, subscription.id, utcnow()):
                raise Conflict("this checkout was paid meanwhile")

    async def _after_conflict(self, session_id: str) -> ASGIResponse:
        """A payment refused because the customer has a live subscription: this
        session's own (paid by a request that ran beside this one), or another's."""
        again = await find(self.gateway.database.reads, session_id)
        if again is not None and again.completed_at is not None:
            return _redirect(again.success_url)
        cancel_url = again.cancel_url if again is not None else None
        page = message_page(
            "Already subscribed",
            "You already have a subscription, so this checkout cannot be paid.",
            (cancel_url, "Go back") if cancel_url else None,
        )
        return _page(page, 409)


def _unpayable(found: OpenSession, state: State) -> ASGIResponse | None:
    """The page of a session that cannot be paid (410), ``None`` for an open one."""
    if state == "paid":
        page = message_page(
            "Already paid", "This checkout has been paid.", (found.success_url, "Continue")
        )
    elif state == "expired":
        page = message_page(
            "Checkout expired",
            "This checkout link has expired. Go back and start again.",
            (found.cancel_url, "Go back"),
        )
    elif state == "withdrawn":
        page = message_page(
            "Checkout no longer available",
            "This plan can no longer be bought here.",
            (found.cancel_url, "Go back"),
        )
    else:
        return None
    return _page(page, 410)


def _forged(session_id: str) -> bytes:
    return message_page(
        "Form expired",
        "This payment form could not be verified: it may be open in another window, or "
        "come from another site. Open the checkout again and retry. Nothing was charged.",
        (f"{CHECKOUT.prefix}/{session_id}", "Open the checkout again"),
    )


def _header(scope: Any, name: bytes) -> str | None:
    """The first ``name`` header of the request."""
    headers: list[tuple[bytes, bytes]] = scope["headers"]
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


def _cookie(scope: Any) -> str | None:
    """The page's nonce from the request's cookies, when one is well-formed."""
    headers: list[tuple[bytes, bytes]] = scope["headers"]
    for name, value in headers:
        if name != b"cookie":
            continue
        for pair in value.decode("latin-1").split(";"):
            key, _, nonce = pair.strip().partition("=")
            if key == COOKIE and NONCE.fullmatch(nonce):
                return nonce
    return None


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of a checked URL, as a CSP source."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}{port}"


def _page(
    body: bytes,
    status: int,
    form_action: str = "'none'",
    extra: list[tuple[str, str]] | None = None,
) -> ASGIResponse:
    policy = (
        f"default-src 'none'; style-src {STYLE_SOURCE}; form-action {form_action}; "
        "frame-ancestors 'none'; base-uri 'none'"
    )
    headers = [
        ("cache-control", "no-store"),
        ("content-security-policy", policy),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
        *(extra or []),
    ]
    return ASGIResponse(body=body, status_code=status, media_type="text/html", headers=headers)


def _redirect(location: str) -> ASGIResponse:
    return ASGIResponse(
        status_code=HTTP_303_SEE_OTHER,
        headers=[
            ("location", location),
            ("cache-control", "no-store"),
            ("referrer-policy", "no-referrer"),
        ],
    )


SessionId = Annotated[str, PathParameter(description="The checkout session's id.")]


@get("/{session_id:str}", access=ACCESS, media_type="text/html")
async def show_checkout(
    request: Request[Any, Any, Any],
    session_id: SessionId,
    checkout_page: NamedDependency[CheckoutPage],
) -> ASGIResponse:
    """The card form; 404 for an unknown session, 410 for a paid or expired one."""
    return await checkout_page.show(request.scope, session_id)


@post(
    "/{session_id:str}",
    access=ACCESS,
    media_type="text/html",
    status_code=HTTP_303_SEE_OTHER,
    operation_class=PaymentOperation,
)
async def pay_checkout(
    request: Request[Any, Any, Any],
    session_id: SessionId,
    checkout_page: NamedDependency[CheckoutPage],
) -> ASGIResponse:
    """303 to ``success_url`` once paid; the form again with the processor's
    message (422) when the card is refused."""
    return await checkout_page.pay(request, session_id)


PAGE_ROUTES = [show_checkout, pay_checkout]
PAGE_DEPENDENCIES: dict[str, Any] = {"checkout_page": CheckoutPage}
