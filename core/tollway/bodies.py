"""Client JSON bodies: one decoder that answers every hostile body with a 4xx.

:func:`decode_json_body` is how a client's JSON is read, by the core and by plugins.
Whatever the bytes, it returns a value of the requested type or raises
:class:`~tollway.errors.BadRequest` with a short message: invalid UTF-8 (lone
surrogates included), malformed JSON, nesting deeper than :data:`MAX_DEPTH`,
integers outside 64 bits, numbers out of range, a key repeated in one object, or a
value of the wrong type. Never another exception, so never a 500 or a logged
traceback.

Litestar converts bodies leniently (``strict=False``: ``0`` passes as ``false``,
``"5"`` as ``5``), which would let schema-violating input through. Every route whose
``data`` parameter is a JSON body gets a ``before_request`` step that refuses other
media types (415) and decodes the raw body strictly first, once: the value is kept in
the request's state, handed to Litestar as the request's JSON (which passes a value
of the declared type through unchanged) and read by admission steps that need a body
field (:class:`tollway.BodyKey`). Handlers keep declaring ``data: JSONBody[Struct]``,
so the OpenAPI document is unchanged.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec
from litestar import Request
from litestar.enums import RequestEncodingType
from litestar.handlers import HTTPRouteHandler
from litestar.params import BodyKwarg
from litestar.types import Scope
from litestar.utils.scope.state import ScopeState

from tollway.errors import ApiError, BadRequest, UnsupportedMediaType
from tollway.state import request_state

T = TypeVar("T")

RequestStep = Callable[[Request[Any, Any, Any]], Awaitable[Any]]
"""A ``before_request`` step: returns ``None`` to go on, or a response to stop."""

BODY_TYPE = "tollway.body_type"
"""Route ``opt`` key: the type a route's JSON body is decoded into, set at start-up."""

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects a body may have. Our bodies need a
handful of levels. msgspec's own limit is the interpreter's recursion limit (it
raises ``RecursionError`` at about 990 levels), far more than any walk of the value in
Python survives."""

MAX_MESSAGE = 200
"""Error messages quote the client's input (a key, a path); this bounds them."""

_INT64 = range(-(2**63), 2**63)
"""Integers a body may hold: what database columns and most JSON clients can."""

_TOO_DEEP = f"Request body is nested more than {MAX_DEPTH} levels deep"


def decode_json_body(body: bytes, into: type[T]) -> T:
    """``body`` decoded strictly into ``into`` (a type msgspec decodes, built once per
    type), or :class:`~tollway.errors.BadRequest` saying why not. Whole-number floats
    count as integers, as in JSON Schema (``144.0`` for ``144``)."""
    decoder: msgspec.json.Decoder[T] = _DECODERS[into]
    try:
        return _decode(body, decoder)
    except msgspec.ValidationError as error:
        message = f"Invalid request body: {error}"
    except (msgspec.DecodeError, json.JSONDecodeError) as error:
        # (The json module reads only what msgspec accepted; should they ever disagree,
        # the client still gets a 400.) msgspec 0.23 checks UTF-8 itself and calls bad
        # bytes a decode error: the bytes, not the library's wording, say which it is.
        if _is_utf8(body):
            message = f"Request body is not valid JSON: {error}"
        else:
            message = "Request body is not valid UTF-8"
    except UnicodeDecodeError:
        message = "Request body is not valid UTF-8"
    except RecursionError:
        message = _TOO_DEEP
    raise BadRequest(_shortened(message))


def is_json_media_type(content_type: bytes) -> bool:
    """Whether a ``Content-Type`` value is ``application/json`` or
    ``application/<anything>+json``, with any parameters."""
    essence = content_type.partition(b";")[0].strip().lower()
    return essence == b"application/json" or (
        essence.startswith(b"application/") and essence.endswith(b"+json")
    )


def refuse_other_media_types(scope: Scope) -> None:
    """415 when the request declares a ``Content-Type`` that is not JSON. A request
    without one is read as JSON: scripts often send none (``requests.post(url,
    data=...)``), and without cookies or ambient credentials there is no cross-site
    request to guard against."""
    for name, value in scope["headers"]:
        if name == b"content-type" and not is_json_media_type(value):
            declared = value.decode("latin-1")
            raise UnsupportedMediaType(
                _shortened(
                    f"Content-Type {declared!r} is not supported: "
                    "send the body as JSON with 'Content-Type: application/json'"
                )
            )


def json_body_type(handler: HTTPRouteHandler) -> Any | None:
    """The type of ``handler``'s JSON ``data`` body, or ``None`` if it has none."""
    field = handler.parsed_fn_signature.parameters.get("data")
    if field is None:
        return None
    kwarg = field.kwarg_definition
    if isinstance(kwarg, BodyKwarg) and kwarg.media_type != RequestEncodingType.JSON:
        return None
    into = field.annotation
    _DECODERS[into]  # an unsupported type fails at start-up, not on the first request
    return into


async def read_body(request: Request[Any, Any, Any]) -> Any | None:
    """The route's JSON body, decoded strictly once per request; ``None`` when it
    cannot be (the body step answers why: 415 or 400)."""
    state = request_state(request.scope)
    if not state.body_decoded:
        try:
            refuse_other_media_types(request.scope)
            state.body = decode_json_body(
                await request.body(), request.route_handler.opt[BODY_TYPE]
            )
        except ApiError as error:
            state.body, state.body_error = None, error
    return state.body


def key_field(body: bytes, name: str) -> str | None:
    """The string field ``name`` of a JSON object body, or ``None`` (never an error)."""
    try:
        value = decode_json_body(body, _key_struct(name))
    except BadRequest:
        return None
    found = getattr(value, name)
    return found if isinstance(found, str) else None


@functools.cache
def _key_struct(name: str) -> type[msgspec.Struct]:
    return msgspec.defstruct("KeyField", [(name, Any, None)])


async def check_body(request: Request[Any, Any, Any]) -> None:
    """The body step of a route with a JSON body: answers 415/400 for a body that
    cannot be decoded; otherwise the handler's ``data`` is the decoded value."""
    body = await read_body(request)
    state = request_state(request.scope)
    if state.body_error is not None:
        raise state.body_error
    ScopeState.from_scope(request.scope).json = body


class _Decoders(dict[Any, "msgspec.json.Decoder[Any]"]):
    """One msgspec decoder per type, made on first use."""

    def __missing__(self, into: Any) -> msgspec.json.Decoder[Any]:
        decoder = self[into] = msgspec.json.Decoder(into)
        return decoder


_DECODERS = _Decoders()


def _decode(body: bytes, decoder: msgspec.json.Decoder[T]) -> T:
    try:
        value = decoder.decode(body)
    except msgspec.ValidationError as error:
        # Whole-number floats are the one thing the strict decoder refuses that JSON
        # Schema allows; other refusals cannot be mended by converting them.
        if "got `float`" not in str(error):
            raise
        msgspec.json.decode(body)  # the strict decode stopped at the error: all JSON?
        tree = _checked_tree(body)
        try:
            converted: T = msgspec.convert(_integral_floats_as_ints(tree), decoder.type)
        except msgspec.ValidationError:
            raise error from None
        return converted
    _checked_tree(body)
    return value


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _checked_tree(body: bytes) -> Any:
    """The generic value of a body msgspec accepts as JSON, refusing what msgspec lets
    through: repeated keys, integers outside 64 bits and deep nesting. The json
    module, unlike msgspec, reports every key and integer as it reads them. The bytes
    are decoded here, strictly: given bytes, ``json.loads`` would let UTF-8-encoded
    surrogates through (``surrogatepass``), in keys msgspec skipped without reading."""
    text = body.decode("utf-8")
    tree = json.loads(text, object_pairs_hook=_unique_keys, parse_int=_int64)
    # Nesting deeper than MAX_DEPTH needs more brackets than that: a cheap test first.
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and _nested_too_deep(tree):
        raise BadRequest(_TOO_DEEP)
    return tree


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        [(repeated, _)] = Counter(key for key, _ in pairs).most_common(1)
        raise BadRequest(_shortened(f"Request body repeats the key {repeated!r} in one object"))
    return value


def _int64(literal: str) -> int:
    # A longer literal cannot fit (and Python refuses to read one of 4,300 digits).
    if len(literal) <= len(str(_INT64.start)) and (value := int(literal)) in _INT64:
        return value
    raise BadRequest("Invalid request body: integers must fit in 64 bits")


def _nested_too_deep(tree: Any) -> bool:
    """Whether ``tree`` nests more than MAX_DEPTH containers, level by level (no
    recursion, whatever the depth)."""
    level = [tree]
    for _ in range(MAX_DEPTH):
        level = [
            child
            for item in level
            if isinstance(item, list | dict)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return False
    return any(isinstance(item, list | dict) for item in level)


def _integral_floats_as_ints(value: Any) -> Any:
    """``value`` with whole-number floats that fit in 64 bits as ints (recursive: only
    called on trees :func:`_checked_tree` has bounded to MAX_DEPTH)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() and int(value) in _INT64 else value
    if isinstance(value, list):
        return [_integral_floats_as_ints(item) for item in value]
    if isinstance(value, dict):
        return {key: _integral_floats_as_ints(item) for key, item in value.items()}
    return value


def _shortened(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"
