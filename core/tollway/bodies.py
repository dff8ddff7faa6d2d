"""Strict JSON request bodies.

Litestar converts bodies leniently (``strict=False``: ``0`` passes as ``false``,
``"5"`` as ``5``), which would let schema-violating input through. Every route whose
``data`` parameter is a JSON body gets a ``before_request`` step that decodes the raw
body strictly into the declared type first and answers 400 naming the offending field.
Handlers keep declaring ``data: JSONBody[Struct]``, so the OpenAPI document is unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from litestar import Request
from litestar.enums import RequestEncodingType
from litestar.handlers import HTTPRouteHandler
from litestar.params import BodyKwarg

from tollway.errors import BadRequest

RequestStep = Callable[[Request[Any, Any, Any]], Awaitable[Any]]
"""A ``before_request`` step: returns ``None`` to go on, or a response to stop."""


def strict_body_step(handler: HTTPRouteHandler) -> RequestStep | None:
    """A step decoding ``handler``'s JSON ``data`` body strictly, or ``None`` if it has none."""
    field = handler.parsed_fn_signature.parameters.get("data")
    if field is None:
        return None
    kwarg = field.kwarg_definition
    if isinstance(kwarg, BodyKwarg) and kwarg.media_type != RequestEncodingType.JSON:
        return None
    decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(field.annotation)

    async def check_body(request: Request[Any, Any, Any]) -> None:
        body = await request.body()
        try:
            decoder.decode(body)
        except msgspec.ValidationError as error:
            # JSON Schema counts 144.0 as an integer; msgspec's strict mode does not.
            if not _valid_with_integral_floats(body, field.annotation):
                raise BadRequest(f"Invalid request body: {error}") from None
        except msgspec.DecodeError as error:
            raise BadRequest(f"Request body is not valid JSON: {error}") from None

    return check_body


def _integral_floats_as_ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral_floats_as_ints(item) for item in value]
    if isinstance(value, dict):
        return {key: _integral_floats_as_ints(item) for key, item in value.items()}
    return value


def _valid_with_integral_floats(body: bytes, annotation: Any) -> bool:
    """Whether the body is valid once whole-number floats count as integers (only
    tried after a strict failure, so ordinary requests pay nothing)."""
    try:
        msgspec.convert(_integral_floats_as_ints(msgspec.json.decode(body)), annotation)
    except msgspec.MsgspecError:
        return False
    return True
