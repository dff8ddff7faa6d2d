"""JSON bodies a request may leave out: a body of options whose every field has a
default (``DELETE /subscriptions/{id}``'s ``{"immediately": true}``), which clients
of ``DELETE`` usually send no body for.

The kit decodes a route's ``data`` strictly and requires it. Such a route instead
reads its body with :func:`optional_json_body` (the same strict decoder and media type
check; no body is the options' defaults) and declares it in its OpenAPI operation with
``operation_class=optional_body_operation(Options)``, since a handler without ``data``
has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
from litestar import Request
from litestar.openapi.spec import OpenAPIMediaType, Operation, RequestBody, Schema

from tollway.bodies import decode_json_body, refuse_other_media_types

S = TypeVar("S", bound=msgspec.Struct)

_SCHEMA_KEYS = {"type": "type", "default": "default", "enum": "enum", "description": "description"}
"""The JSON Schema keywords an options struct's fields use, as Litestar names them."""


async def optional_json_body(request: Request[Any, Any, Any], into: type[S]) -> S:
    """The request's JSON body decoded strictly into ``into`` (400 saying why not,
    415 for another media type), or ``into()`` when the request has no body."""
    body = await request.body()
    if not body:
        return into()
    refuse_other_media_types(request.scope)
    return decode_json_body(body, into)


def _schema(node: dict[str, Any]) -> Schema:
    """A Litestar schema of a msgspec JSON schema of flat fields."""
    return Schema(
        **{ours: node[theirs] for theirs, ours in _SCHEMA_KEYS.items() if theirs in node},
        properties={name: _schema(field) for name, field in node.get("properties", {}).items()}
        or None,
        required=node.get("required"),
    )


def optional_body_operation(options: type[msgspec.Struct]) -> type[Operation]:
    """The OpenAPI operation class of a route taking ``options`` as an optional JSON
    body (a struct of fields with defaults, each a JSON scalar)."""
    described = msgspec.json.schema(options)["$defs"][options.__name__]
    body = RequestBody(
        required=False,
        content={"application/json": OpenAPIMediaType(schema=_schema(described))},
    )

    @dataclass
    class WithOptionalBody(Operation):
        def __post_init__(self) -> None:
            self.request_body = body

    return WithOptionalBody
