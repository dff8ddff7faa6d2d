"""The redirect host: ``GET /l/<code>`` (or ``/<code>`` on ``short_link_base``'s host)
answers 302 to the link's destination.

No key: visitors are counted per client address (the ``anonymous`` plan's
``redirects_per_minute``, trusted proxies as for the public QR API), and a visitor over
it gets the gateway's 429 ``{"detail"}`` with ``Retry-After``. Nothing on the way reads
the database while the code is cached (:mod:`tollway_link.targets`) or waits for the
click to be stored: the redirect hands a :class:`~tollway_link.capture.RawClick` to the
gateway's :class:`~tollway_link.clicks.Clicks` queue and answers (unless the queue is
:attr:`~tollway_link.clicks.Clicks.crowded`, storage having fallen behind: then it waits
for room first).

Every answer is ``Cache-Control: no-store``: a cached redirect would hide its clicks,
and a code unknown now may name a link in a minute. An unknown code is a small HTML
page (404); a link past ``expires_at`` or out of clicks sends visitors to its
``expired_url``, else answers 410. Those visits are no clicks. ``HEAD`` answers as
``GET`` does without a body, and its click is stored as a bot's, never counted.
"""

from __future__ import annotations

import time
from random import getrandbits
from typing import Annotated, Any

from litestar import Request, route
from litestar.params import PathParameter
from litestar.response.base import ASGIResponse
from litestar.status_codes import HTTP_302_FOUND
from litestar.types import Receive, Scope, Send

from tollway import (
    ClientAddress,
    Gateway,
    service_of,
    visitor_access,
)
from tollway_link.addresses import QR_MARKER, Addresses
from tollway_link.capture import RawClick
from tollway_link.clicks import Clicks
from tollway_link.product import ANONYMOUS
from tollway_link.targets import Target, Targets

MAX_USER_AGENT = 512
MAX_REFERER = 2048
"""Longest header values a click keeps: enough for every real one, and a queue of
clicks stays small whatever a client sends."""
NO_STORE = "no-store"
_QR_MARKER = QR_MARKER.encode()


def _page(title: str, text: str) -> bytes:
    """A page that loads nothing from anywhere."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="robots" content="noindex"><title>{title}</title><style>'
        "body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:15vh auto;"
        "padding:0 1rem;color:#222}h1{font-size:1.5rem}</style></head>"
        f"<body><h1>{title}</h1><p>{text}</p></body></html>"
    ).encode()


NOT_FOUND_PAGE = _page(
    "Link not found", "No short link has this address. Check it for a typing mistake."
)
GONE_PAGE = _page("Link no longer available", "This short link has expired.")
_NO_STORE_HEADER = ("cache-control", NO_STORE)
_PAGE_HEADERS = [
    _NO_STORE_HEADER,
    ("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'"),
]


ACCESS = visitor_access(ANONYMOUS, "redirects_per_minute", counter="redirects", what="redirects")


class Redirects:
    """Answers redirects from the process's :class:`Targets` and queues their clicks
    (a service: one per gateway)."""

    def __init__(self, gateway: Gateway) -> None:
        self.addresses = gateway.service(Addresses)
        self.targets = gateway.service(Targets)
        self.clicks = gateway.service(Clicks)
        self.clients = ClientAddress(gateway.settings.trusted_proxies)

    async def follow(self, scope: Any, code: str) -> ASGIResponse:
        head = scope["method"] == "HEAD"
        target = await self.targets.find(code) if self.addresses.possible(code) else None
        if target is None:
            return _html(NOT_FOUND_PAGE, 404, head)
        now = time.time()
        if target.used_up(now):
            if target.expired_url is None:
                return _html(GONE_PAGE, 410, head)
            return _Redirect(target.expired_url)
        if not head:
            target.clicks += 1
        clicks = self.clicks
        clicks.add(self._click(scope, target, now, head))
        if clicks.crowded:
            # Storage has fallen behind: answer as fast as it stores, losing nothing.
            await clicks.room()
        return _Redirect(target.destination)

    def _click(self, scope: Any, target: Target, now: float, head: bool) -> RawClick:
        user_agent = referer = ""
        for name, value in scope["headers"]:
            if name == b"user-agent":
                user_agent = value[:MAX_USER_AGENT].decode("latin-1")
            elif name == b"referer":
                referer = value[:MAX_REFERER].decode("latin-1")
        query: bytes = scope["query_string"]
        return RawClick(
            _click_id(now),
            target.link_id,
            target.account_id,
            now,
            self.clients.of(scope),
            user_agent,
            referer,
            _QR_MARKER in query.split(b"&") if query else False,
            head,
        )


def _click_id(now: float) -> str:
    """32 hex characters, time first: ids of clicks stored together sit together in
    the primary key's index (random ones would each touch a page of their own). The
    other half is 64 random bits from :mod:`random` (reseeded from the OS in every
    process, forked ones included), which keep ids apart across processes: they need to
    be unique, not secret, so no system call per redirect for ``secrets``."""
    return f"{int(now * 1_000_000):016x}{getrandbits(64):016x}"


class _Redirect(ASGIResponse):
    """A 302 to ``location``, sent as two ASGI messages with its headers encoded once.

    An ASGI response, so Litestar passes it through as it is. ``ASGIResponse``'s own
    constructor builds a header map and picks a media type, a tenth of a redirect's
    time on the request path; a redirect has three fixed headers and no body.
    (``HEAD`` gets the same answer: there is no body to leave out.)"""

    def __init__(self, location: str) -> None:
        # Nothing of the base class's state is used: no super().__init__().
        self.location = location.encode("latin-1")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": HTTP_302_FOUND,
                # A list of its own: the gateway's before_send hook appends to it.
                "headers": [(b"location", self.location), *_REDIRECT_HEADERS],
            }
        )
        await send({"type": "http.response.body", "body": b"", "more_body": False})


_REDIRECT_HEADERS = ((b"cache-control", NO_STORE.encode()), (b"content-length", b"0"))


def _html(page: bytes, status: int, head: bool) -> ASGIResponse:
    return ASGIResponse(
        body=b"" if head else page,
        status_code=status,
        media_type="text/html",
        headers=_PAGE_HEADERS,
    )


@route(
    "/{code:str}",
    http_method=["GET", "HEAD"],
    access=ACCESS,
    status_code=HTTP_302_FOUND,
    media_type="text/html",
)
async def follow_link(
    request: Request[Any, Any, Any],
    code: Annotated[str, PathParameter(description="The link's code.")],
) -> ASGIResponse:
    """302 to the link's destination; 404 (HTML) for an unknown code; 302 to its
    ``expired_url`` or 410 (HTML) once it has expired or is out of clicks."""
    # Not a dependency: this is the gateway's busiest keyless route (see service_of).
    return await service_of(request, Redirects).follow(request.scope, code)


REDIRECT_ROUTES = [follow_link]
