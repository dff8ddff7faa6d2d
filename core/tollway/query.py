"""Query strings decoded as UTF-8 on every route, or refused.

Litestar decodes a raw query string as Latin-1 and only its %-escapes as UTF-8, with
invalid sequences replaced by U+FFFD. So ``?q=Zoë`` sent raw (as browsers and most
clients send non-ASCII) arrives as ``ZoÃ«``, and ``?data=%FF`` as ``\\ufffd``: a
handler would check text other than what the client sent. :func:`check_query_string`
runs first in every route's entry (:mod:`tollway.entry`), before Litestar parses the
query (and before admission reads a key from it): raw non-ASCII bytes become %-escapes, which
Litestar's parser decodes as UTF-8, and a query string whose bytes, once unescaped, are
not UTF-8 is answered 400 in the product's error style, as is a parameter without a
name (``?=x``), which no route declares. (A step, not middleware: a
middleware layer cost every request 1.7 µs for what is, nearly always, two byte checks.)
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote_from_bytes, unquote_to_bytes

from litestar import Request
from litestar._kwargs import KwargsModel
from litestar.handlers import HTTPRouteHandler
from litestar.types import Scope

from tollway.errors import BadRequest

_ASCII = bytes(range(128))
_ESCAPED_NON_ASCII = re.compile(rb"%[89a-fA-F][0-9a-fA-F]")


def utf8_query(query: bytes) -> bytes:
    """``query`` as an ASCII query string meaning the same UTF-8 text: raw non-ASCII
    bytes %-escaped, the rest untouched. :class:`~tollway.errors.BadRequest` when its
    unescaped bytes are not UTF-8 (invalid, overlong, or surrogates)."""
    raw = not query.isascii()
    if not raw and _ESCAPED_NON_ASCII.search(query) is None:
        return query  # only ASCII, however it is escaped
    try:
        # Separators are ASCII, so no UTF-8 sequence spans two names or values:
        # the whole string is valid exactly when each part is.
        unquote_to_bytes(query).decode()
    except UnicodeDecodeError:
        raise BadRequest("Invalid request: the query string is not valid UTF-8") from None
    return quote_from_bytes(query, safe=_ASCII).encode() if raw else query


def check_query_string(scope: Scope) -> None:
    """Apply :func:`utf8_query` to the request's query string, refusing a parameter
    without a name; one in plain ASCII without ``%`` (nearly all of them) passes
    untouched."""
    query = scope["query_string"]
    if query[:1] == b"=" or b"&=" in query:
        raise BadRequest("Invalid request: a query parameter has no name")
    if not query.isascii() or b"%" in query:
        scope["query_string"] = utf8_query(query)


def nullable_query_parameters(handler: HTTPRouteHandler, kwargs: KwargsModel) -> list[str]:
    """The names under which ``handler``'s optional query parameters admitting ``None``
    arrive (``status: OrderStatus | None = None``)."""
    parameters = handler.parsed_fn_signature.parameters
    return sorted(
        definition.field_alias
        for definition in kwargs.expected_query_params
        if not definition.is_required and parameters[definition.field_name].is_optional
    )


def refuse_null(names: list[str]) -> Callable[[Request[Any, Any, Any]], Awaitable[None]]:
    """A route step refusing ``?name=null`` for each of ``names``: Litestar reads that
    as the parameter left out, which it is not (``null`` is no value of such a
    parameter, and a client sending it meant something), so it is a 400 in the
    product's style. Only routes with such parameters take the step."""

    async def refuse(request: Request[Any, Any, Any]) -> None:
        if b"null" not in request.scope["query_string"]:
            return  # nearly every request: no query to parse here
        query = request.query_params
        for name in names:
            if "null" in query.getall(name, ()):
                raise BadRequest(f"Invalid request: {name}: null is not a valid value")

    return refuse
