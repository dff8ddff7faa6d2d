"""Typed API errors and their mapping to responses in a product's error style."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import msgspec
from litestar import Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.params import ParameterKwarg

from tollway.db.database import unavailable as database_unavailable

if TYPE_CHECKING:
    from litestar.handlers import BaseRouteHandler

    from tollway.registry import Product

log = logging.getLogger("tollway")

_encoder = msgspec.json.Encoder()


class ApiError(Exception):
    """An error with a client-facing message; ``status_code`` is fixed per class.

    ``extra`` fields are added to the body next to the message (``{"error": ...,
    "docs": ...}``); ``headers`` are sent with the response.
    """

    status_code: ClassVar[int] = 500

    def __init__(
        self,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})


class BadRequest(ApiError):
    status_code = 400


class Unauthorized(ApiError):
    status_code = 401


class PaymentRequired(ApiError):
    status_code = 402


class Forbidden(ApiError):
    status_code = 403


class NotFound(ApiError):
    status_code = 404


class Conflict(ApiError):
    status_code = 409


class PayloadTooLarge(ApiError):
    status_code = 413


class UnsupportedMediaType(ApiError):
    status_code = 415


class UnprocessableEntity(ApiError):
    status_code = 422


class TooManyRequests(ApiError):
    status_code = 429


class UnavailableForLegalReasons(ApiError):
    status_code = 451


class ServiceUnavailable(ApiError):
    status_code = 503


class InternalServerError(ApiError):
    """What any error the gateway did not expect becomes (logged with its traceback)."""

    status_code = 500


class ErrorMapper(Protocol):
    """Turns any error raised while serving a request into the response a product's
    clients expect."""

    def to_response(
        self,
        error: Exception,
        product: Product | None,
        *,
        request_id: str,
        handler: BaseRouteHandler | None = None,
    ) -> Response[bytes]:
        """``handler`` is the route's handler, ``None`` when no route matched."""
        ...


class StyledErrorMapper:
    """Classifies errors, then writes ``{"detail": message}`` or ``{"error": message}``
    by the product's style.

    :class:`ApiError` subclasses carry their status; a request Litestar could not
    validate is a 400 naming each parameter as the client sends it; Litestar's own
    HTTP errors keep theirs; an unreachable database is a 503 with ``Retry-After``;
    anything else is a 500, logged. Server errors (5xx) also carry ``request_id`` so
    callers can quote it to support; 400s carry ``docs`` for products that declare a
    ``docs_url``. Requests outside every product use the ``detail`` style.
    """

    def to_response(
        self,
        error: Exception,
        product: Product | None,
        *,
        request_id: str,
        handler: BaseRouteHandler | None = None,
    ) -> Response[bytes]:
        known = self.classify(error, handler, request_id)
        style = product.error_style if product is not None else "detail"
        body: dict[str, Any] = {style: known.message}
        if known.status_code == 400 and product is not None and product.docs_url:
            body["docs"] = product.docs_url
        if known.extra:
            body.update(known.extra)
        if known.status_code >= 500:
            body["request_id"] = request_id
        return Response(
            _encoder.encode(body),
            status_code=known.status_code,
            media_type="application/json",
            headers=known.headers,
        )

    def classify(
        self, error: Exception, handler: BaseRouteHandler | None, request_id: str
    ) -> ApiError:
        """``error`` as the :class:`ApiError` it answers as."""
        if isinstance(error, ApiError):
            return error
        if isinstance(error, ValidationException):
            return BadRequest(validation_message(error, handler))
        if isinstance(error, HTTPException) and error.status_code < 500:
            known = ApiError(str(error.detail), headers=error.headers)
            known.status_code = error.status_code  # type: ignore[misc]  # Litestar's status
            return known
        if database_unavailable(error):
            log.warning("database unavailable (request id %s): %s", request_id, error)
            return ServiceUnavailable(
                "The database is temporarily unavailable; retry shortly",
                headers={"Retry-After": "1"},
            )
        if not isinstance(error, HTTPException):
            log.exception("unhandled error (request id %s)", request_id, exc_info=error)
        return InternalServerError("Internal server error")


def validation_message(error: ValidationException, handler: BaseRouteHandler | None) -> str:
    """``Invalid request: <name>: <problem>; ...``, naming each parameter as the client
    sends it: Litestar reports the handler's argument (``content``), not the name it
    is declared under (``QueryParameter(name="data")``)."""
    parameters = handler.parsed_fn_signature.parameters if handler is not None else {}
    problems = []
    for item in error.extra if isinstance(error.extra, list) else []:
        if isinstance(item, dict):
            key = item.get("key")
            message = item.get("message", "invalid value")
            if key and item.get("source") != "body":
                argument, dot, rest = key.partition(".")
                field = parameters.get(argument)
                declared = field.kwarg_definition if field is not None else None
                if isinstance(declared, ParameterKwarg) and declared.name:
                    key = f"{declared.name}{dot}{rest}"
            problems.append(f"{key}: {message}" if key else str(message))
    return "Invalid request: " + ("; ".join(problems) if problems else str(error.detail))
