"""tollway: a multi-product API gateway whose products are pluggy plugins.

The names plugin authors need are exported here; everything else is internal.
"""

from litestar.di import NamedDependency

from tollway.bodies import decode_json_body
from tollway.errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    PaymentRequired,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
    UnavailableForLegalReasons,
    UnprocessableEntity,
    UnsupportedMediaType,
)
from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl
from tollway.pipeline import Caller, CurrentCaller
from tollway.registry import Plan, Product, RegistrationError
from tollway.segmentation import Segmenter
from tollway.settings import Settings, load_settings
from tollway.webhooks import verify_signature

CurrentGateway = NamedDependency[Gateway]
"""Annotate a handler parameter named ``gateway`` with this to receive the gateway."""

__all__ = [
    "ApiError",
    "BadRequest",
    "Caller",
    "Conflict",
    "CurrentCaller",
    "CurrentGateway",
    "Forbidden",
    "Gateway",
    "NotFound",
    "PayloadTooLarge",
    "PaymentRequired",
    "Plan",
    "Product",
    "RegistrationError",
    "Segmenter",
    "ServiceUnavailable",
    "Settings",
    "TooManyRequests",
    "Unauthorized",
    "UnavailableForLegalReasons",
    "UnprocessableEntity",
    "UnsupportedMediaType",
    "decode_json_body",
    "hookimpl",
    "load_settings",
    "verify_signature",
]
