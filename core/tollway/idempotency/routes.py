"""Idempotency on a route: what a route declaring ``idempotent=True`` gets.

* A route middleware (:func:`settle_answers`) holding the answer of a claimed request
  until it is stored (or the key freed), then sending it.
* A ``before_request`` step claiming the key (:func:`claim_step`), after admission
  and the body step.
* An ``after_request`` hook keeping the handler's answer, and a ``transaction`` storing
  it before its commit: Litestar makes the answer, then commits the request's
  transaction, then sends the answer.

They share the request's claim through a context variable the middleware sets:
Litestar's ``after_request`` hook receives the response and nothing else. The
middleware and the ``transaction`` are part of the route's handler as Litestar builds
the app (:func:`prepare_routes`); the step is one of its ``before_request`` steps
(:mod:`tollway.app`). Routes that do not declare it get none of them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from litestar import Request, Response, Router
from litestar.di import Provide
from litestar.handlers import HTTPRouteHandler
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from sqlalchemy.ext.asyncio import AsyncSession

from tollway.db import Database
from tollway.idempotency.keys import Answer, Claim, IdempotencyKeys, fingerprint, presented
from tollway.registry import RegistrationError
from tollway.state import request_state

if TYPE_CHECKING:
    from tollway.admission.access import Access
    from tollway.bodies import RequestStep
    from tollway.gateway import Gateway

OPT = "idempotent"
"""The route ``opt`` declaring the route idempotent."""


class _Exchange:
    """One request on an idempotent route: its claim, once it made one."""

    __slots__ = ("claim",)

    def __init__(self) -> None:
        self.claim: Claim | None = None


_EXCHANGE: ContextVar[_Exchange | None] = ContextVar("tollway_idempotency", default=None)


def _pending() -> Claim | None:
    exchange = _EXCHANGE.get()
    return exchange.claim if exchange is not None else None


def claim_step(
    handler: HTTPRouteHandler, access: Access, path: str, gateway: Gateway
) -> RequestStep | None:
    """The step claiming the keys of ``handler``'s requests, ``None`` when the route is
    not idempotent; a :class:`RegistrationError` when it cannot be: keys are kept per
    account, so every request the route serves must have one."""
    declared = handler.opt.get(OPT)
    if declared is None or declared is False:
        return None
    where = f"plugin {handler.opt.get('plugin')!r}, route {path}"
    if declared is not True:
        raise RegistrationError(f"{where}: {OPT} must be True or False")
    if access.public or access.anonymous is not None:
        raise RegistrationError(
            f"{where}: {OPT}=True needs a keyed route without anonymous callers "
            "(keys are kept per account)"
        )
    keys = IdempotencyKeys(
        gateway.database, handler.opt["product"], gateway.settings.idempotency_key_ttl
    )

    async def claim_key(request: Request[Any, Any, Any]) -> Response[bytes] | None:
        """Claims the request's key, or answers with the key's kept answer, or refuses
        the request (400 for a malformed key, 409); nothing without a key."""
        scope = request.scope
        key, customer = presented(scope["headers"])
        if key is None:
            return None
        caller = request_state(scope).caller
        assert caller is not None, "idempotent routes are keyed (checked at start-up)"
        request_print = fingerprint(scope, await request.body(), customer)
        claimed = await keys.claim(caller.principal.account_id, key, request_print)
        if isinstance(claimed, Answer):
            return claimed.replay()
        exchange = _EXCHANGE.get()
        assert exchange is not None, "settle_answers is installed with this step"
        exchange.claim = Claim(gateway.database, *claimed, request.route_handler)
        return None

    return claim_key


def prepare_routes(routers: Iterable[Router], database: Database) -> None:
    """Give each handler of ``routers`` declaring ``idempotent=True`` the middleware
    settling its answers, the ``after_request`` hook keeping them and the
    ``transaction`` storing them. Done on the routers' own copies of the handlers,
    before the app is built: Litestar builds each route's middleware and dependencies
    then. Other handlers are left as they are."""
    provider: Provide | None = None
    for router in routers:
        for route in router.routes:
            for handler in getattr(route, "route_handlers", ()):
                if not isinstance(handler, HTTPRouteHandler) or not _declares(handler):
                    continue
                provider = provider or Provide(_transaction(database))
                layers = reversed(handler.ownership_layers)
                own: Any = next(
                    (layer.after_request for layer in layers if layer.after_request), None
                )
                handler.middleware = [*(handler.middleware or ()), settle_answers]
                handler.dependencies = {**(handler.dependencies or {}), "transaction": provider}
                handler.after_request = _keeping(own)


def _declares(handler: HTTPRouteHandler) -> bool:
    """Whether the handler's ``opt``, merged with its routers' as Litestar will, asks
    for idempotency (a value other than a bool is refused by :func:`claim_step`)."""
    declared = None
    for layer in handler.ownership_layers:
        declared = (layer.opt or {}).get(OPT, declared)
    return declared is not None and declared is not False


def settle_answers(app: ASGIApp) -> ASGIApp:
    """Route middleware: holds the answer of a request whose key is claimed and not
    settled yet, settles it, then sends it. Errors are answered inside it (Litestar
    puts an exception handler between a route's middleware and its handler), so it
    sees every answer as it is sent."""

    async def settling(scope: Scope, receive: Receive, send: Send) -> None:
        exchange = _Exchange()
        held: list[Message] = []

        async def hold(message: Message) -> None:
            claim = exchange.claim
            if claim is None or claim.settled:
                await send(message)
                return
            held.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                await claim.settle(held)
                for kept in held:
                    await send(kept)

        reset = _EXCHANGE.set(exchange)
        try:
            await app(scope, receive, hold)
        finally:
            _EXCHANGE.reset(reset)

    return settling


def _keeping(
    own: Callable[[Any], Awaitable[Any]] | None,
) -> Callable[[Any], Awaitable[Any]]:
    """The ``after_request`` hook: runs the route's own, then keeps a claimed request's
    answer for its transaction (the hook runs before the commit)."""

    async def keep_answer(response: Any) -> Any:
        if own is not None:
            response = await own(response)
        claim = _pending()
        if claim is not None and type(response) is Response:
            claim.answer = Answer.rendered(response, claim.handler)
        return response

    return keep_answer


def _transaction(database: Database) -> Callable[[], AsyncIterator[AsyncSession]]:
    """The ``transaction`` of idempotent routes: the request's, storing a claimed
    request's answer in it before it commits."""

    async def provide_transaction() -> AsyncIterator[AsyncSession]:
        claim = _pending()
        async with database.transaction() as session:
            yield session
            stored = claim is not None and await claim.store_in(session)
        if stored and claim is not None:
            claim.settled = True

    return provide_transaction
