"""``POST /v1/account/payment-methods/setup``: a "Save a card" page for the caller's
account, the way a tenant adds a card (cards are typed on the gateway's own page,
never sent through the API).

The answer's ``setup_url`` is the page (:mod:`tollway_account.card_page`), on the
gateway's public origin, usable once until ``expires_at`` (``card_session_ttl``). The
body may be left out; its ``return_url`` is where the page sends the browser once the
card is saved, checked as every hosted card page's URLs are
(:func:`tollway.billing.hosted.return_url`, 400).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import msgspec
from litestar import Request, post
from litestar.di import NamedDependency
from litestar.status_codes import HTTP_201_CREATED
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import (
    CurrentCaller,
    CurrentGateway,
    PublicOrigin,
    optional_body_operation,
    optional_json_body,
)
from tollway.billing.hosted import Url, return_url
from tollway_account import card_sessions
from tollway_account.product import BILLING_WRITE, CARDS
from tollway_account.settings import AccountSettings


class SetupOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/account/payment-methods/setup``; it may be left out."""

    return_url: Url | msgspec.UnsetType = msgspec.UNSET
    """Where the page sends the browser once the card is saved; left out, the page says
    itself which card was saved."""


class SetupStarted(msgspec.Struct, frozen=True):
    setup_url: str
    """The page, ``<gateway's public origin>/account/cards/<session id>``."""
    expires_at: datetime


class CardSetups:
    """Makes "Save a card" sessions (one per request: it holds settings only)."""

    def __init__(self, ttl: timedelta, origin: PublicOrigin) -> None:
        self.ttl = ttl
        self.origin = origin

    def start(
        self, transaction: AsyncSession, scope: Any, account_id: int, options: SetupOptions
    ) -> SetupStarted:
        """A session of the account, in ``transaction``, and the URL of its page."""
        back = None
        if options.return_url is not msgspec.UNSET:
            back = return_url(options.return_url, "return_url")
        session_id, expires_at = card_sessions.create(transaction, account_id, back, self.ttl)
        return SetupStarted(f"{self.origin.of(scope)}{CARDS.prefix}/{session_id}", expires_at)


def provide_card_setups(gateway: CurrentGateway) -> CardSetups:
    """``card_setups``: the deployment's session lifetime and public origin."""
    settings = gateway.product_settings(AccountSettings)
    return CardSetups(
        timedelta(seconds=settings.card_session_ttl),
        PublicOrigin(gateway.settings.trusted_proxies),
    )


@post(
    "/payment-methods/setup",
    scope=BILLING_WRITE,
    status_code=HTTP_201_CREATED,
    idempotent=True,
    operation_class=optional_body_operation(SetupOptions),
)
async def start_card_setup(
    request: Request[Any, Any, Any],
    caller: CurrentCaller,
    transaction: NamedDependency[AsyncSession],
    card_setups: NamedDependency[CardSetups],
) -> SetupStarted:
    """A page where the account's next card is typed; 201 with its URL."""
    options = await optional_json_body(request, SetupOptions)
    return card_setups.start(transaction, request.scope, caller.principal.account_id, options)


SETUP_ROUTES = [start_card_setup]
SETUP_DEPENDENCIES: dict[str, Any] = {"card_setups": provide_card_setups}
