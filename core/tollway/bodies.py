"""Strict JSON request bodies.

Litestar converts bodies leniently (``strict=False``: ``0`` passes as ``false``,
``"5"`` as ``5``), which would let schema-violating input through. Every route whose
``data`` parameter is a JSON body gets a ``before_request`` hook that decodes the raw
body strictly into the declared type first and answers 400 naming the offending field.
Handlers keep declaring ``data: JSONBody[Struct]``, so the OpenAPI document is unchanged.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request
from litestar.enums import RequestEncodingType
from litestar.handlers import HTTPRouteHandler
from litestar.params import BodyKwarg

from tollway.errors import BadRequest


def _strict_check(decoder: msgspec.json.Decoder[Any], previous: Any) -> Any:
    async def check_body(request: Request[Any, Any, Any]) -> Any:
        try:
            decoder.decode(await request.body())
        except msgspec.ValidationError as error:
            raise BadRequest(f"Invalid request body: {error}") from None
        except msgspec.DecodeError as error:
            raise BadRequest(f"Request body is not valid JSON: {error}") from None
        return await previous(request) if previous is not None else None

    return check_body


def enforce_strict_json_body(handler: HTTPRouteHandler) -> None:
    """Install the strict body check on ``handler`` if it takes a JSON ``data`` body."""
    field = handler.parsed_fn_signature.parameters.get("data")
    if field is None:
        return
    kwarg = field.kwarg_definition
    if isinstance(kwarg, BodyKwarg) and kwarg.media_type != RequestEncodingType.JSON:
        return
    previous = [layer.before_request for layer in handler.ownership_layers if layer.before_request]
    decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(field.annotation)
    handler.before_request = _strict_check(decoder, previous[-1] if previous else None)
