"""Typed API errors and their mapping to responses in a product's error style."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import msgspec
from litestar import Response

from tollway.registry import Product

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


class ErrorMapper(Protocol):
    """Turns an error into the response a product's clients expect."""

    def to_response(
        self,
        status_code: int,
        message: str,
        product: Product | None,
        *,
        request_id: str,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Response[bytes]: ...


class StyledErrorMapper:
    """Writes ``{"detail": message}`` or ``{"error": message}`` by the product's style.

    Server errors (5xx) also carry ``request_id`` so callers can quote it to support;
    400s carry ``docs`` for products that declare a ``docs_url``.
    Requests outside every product use the ``detail`` style.
    """

    def to_response(
        self,
        status_code: int,
        message: str,
        product: Product | None,
        *,
        request_id: str,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Response[bytes]:
        style = product.error_style if product is not None else "detail"
        body: dict[str, Any] = {style: message}
        if status_code == 400 and product is not None and product.docs_url:
            body["docs"] = product.docs_url
        if extra:
            body.update(extra)
        if status_code >= 500:
            body["request_id"] = request_id
        return Response(
            _encoder.encode(body),
            status_code=status_code,
            media_type="application/json",
            headers=dict(headers or {}),
        )
