"""A JSON body a request may leave out (``DELETE /subscriptions/{id}``'s options).

The kit decodes a route's ``data`` strictly and requires it; a body of options whose
every field has a default is better left out altogether, as clients of ``DELETE``
usually do. Such a route reads its body with :func:`optional_body` (the same strict
decoder, :func:`tollway.decode_json_body`; no body is the options' defaults) and
declares it in its OpenAPI operation with ``operation_class=optional_body_operation(Options)``,
since a handler without ``data`` has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
from litestar import Request
from litestar.openapi.spec import OpenAPIMediaType, Operation, RequestBody, Schema

from tollway import UnsupportedMediaType, decode_json_body

S = TypeVar("S", bound=msgspec.Struct)

_SCHEMA_KEYS = {"type": "type", "default": "default", "enum": "enum", "description": "description"}
"""The JSON Schema keywords an options struct's fields use, as Litestar names them."""


def _is_json(content_type: bytes) -> bool:
    essence = content_type.partition(b";")[0].strip().lower()
    return essence == b"application/json" or (
        essence.startswith(b"application/") and essence.endswith(b"+json")
    )


async def optional_body(request: Request[Any, Any, Any], into: type[S]) -> S:
    """The request's JSON body decoded strictly into ``into`` (400 saying why not,
    415 for another media type), or ``into()`` when the request has no body."""
    body = await request.body()
    if not body:
        return into()
    for name, value in request.scope["headers"]:
        if name == b"content-type" and not _is_json(value):
            raise UnsupportedMediaType(
                "Send the body as JSON with 'Content-Type: application/json', or no body"
            )
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
