"""What the gateway learns about one request, in one typed object.

A request starts when its :class:`RequestState` is made: the time is noted (for its
duration metric and access log) and its id is chosen, so that every log line written
while serving it carries the id. That happens in one place, :func:`request_state`,
called by every route's entry (:mod:`tollway.entry`) and by the error handler for
requests that matched no route. Admission leaves the caller and the rate limit headers
here, the body step the strictly decoded body; the entry's ``send`` reads them back.
"""

from __future__ import annotations

import itertools
import re
import secrets
from time import perf_counter
from typing import TYPE_CHECKING, Any

from litestar.types import Scope

from tollway.observability.logs import current_request_id

if TYPE_CHECKING:
    from tollway.admission.customers import Customer
    from tollway.admission.express import Lane
    from tollway.errors import ApiError
    from tollway.pipeline import Caller

STATE = "tollway"
"""Key of the :class:`RequestState` in the ASGI scope's ``state``."""

_REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{8,128}")
_REQUEST_ID_PREFIX = secrets.randbits(64) << 64
_request_counter = itertools.count(1)
_UNSET: Any = object()


class RequestState:
    """One request's identity, admission and body, as the gateway learned them."""

    __slots__ = (
        "_caller",
        "authorization",
        "body",
        "body_error",
        "customer",
        "express",
        "headers",
        "request_id",
        "responded",
        "started",
    )

    def __init__(self, request_id: str, started: float, authorization: bytes | None = None) -> None:
        self.request_id = request_id
        """The inbound ``X-Request-ID`` when well-formed, else a new one (32 hex digits)."""
        self.started = started
        """``perf_counter()`` when the gateway first saw the request."""
        self.authorization = authorization
        """The raw ``Authorization`` header (the first), read with the request id."""
        self._caller: Caller | None = None
        self.express: tuple[Lane, int, float] | None = None
        """What an express lane that admitted the request leaves to make the caller
        from, when it is read: the lane, the count and when it was counted."""
        self.customer: Customer | None = None
        """The end customer of a route admitting an ``X-Customer-Token``."""
        self.headers: list[tuple[bytes, bytes]] | None = None
        """Rate limit headers for every response, left by admission or a report."""
        self.body: Any = _UNSET
        """The JSON body, decoded strictly once (see :mod:`tollway.bodies`)."""
        self.body_error: ApiError | None = None
        """Why the body could not be decoded, kept for the body step to answer."""
        self.responded = False
        """Whether the response has started (its headers are sent)."""

    @property
    def caller(self) -> Caller | None:
        """The admitted caller of a keyed route (``None`` for public and anonymous ones)."""
        caller = self._caller
        if caller is None and self.express is not None:
            lane, used, now = self.express
            caller = self._caller = lane.caller(used, now)
        return caller

    @caller.setter
    def caller(self, caller: Caller | None) -> None:
        self._caller = caller

    @property
    def body_decoded(self) -> bool:
        return self.body is not _UNSET


def request_state(scope: Scope) -> RequestState:
    """The request's state, made (and the request started) on first use."""
    state: dict[str, Any] | None = scope.get("state")
    if state is None:
        # Not setdefault: its default would be a new dict on every call of every request.
        state = scope["state"] = {}
    found: RequestState | None = state.get(STATE)
    if found is None:
        found = state[STATE] = _start(scope)
    return found


def _start(scope: Scope) -> RequestState:
    # One pass over the headers for the two the gateway reads on every request.
    inbound = authorization = None
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            if authorization is None:
                authorization = value
        elif name == b"x-request-id" and inbound is None:
            inbound = value
    request_id = _request_id(inbound)
    current_request_id.set(request_id)
    return RequestState(request_id, perf_counter(), authorization)


def _request_id(inbound: bytes | None) -> str:
    if inbound is not None:
        text = inbound.decode("latin-1")
        if _REQUEST_ID_PATTERN.fullmatch(text):
            return text
    # Unique, not secret: a random per-process prefix and a counter cost a fraction of
    # fresh random bytes on every request. 32 hex digits: the prefix's, the counter's.
    return (_REQUEST_ID_PREFIX | next(_request_counter)).to_bytes(16).hex()


def request_id(scope: Scope) -> str:
    """This request's id (the request starts if it had not)."""
    return request_state(scope).request_id
