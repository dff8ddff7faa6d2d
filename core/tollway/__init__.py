"""tollway: a multi-product API gateway whose products are pluggy plugins.

The names plugin authors need are exported here; everything else is internal.
"""

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
)
from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl
from tollway.pipeline import Caller, CurrentCaller
from tollway.registry import Plan, Product, RegistrationError
from tollway.settings import Settings, load_settings
from tollway.webhooks import verify_signature

__all__ = [
    "ApiError",
    "BadRequest",
    "Caller",
    "Conflict",
    "CurrentCaller",
    "Forbidden",
    "Gateway",
    "NotFound",
    "PayloadTooLarge",
    "PaymentRequired",
    "Plan",
    "Product",
    "RegistrationError",
    "ServiceUnavailable",
    "Settings",
    "TooManyRequests",
    "Unauthorized",
    "UnavailableForLegalReasons",
    "UnprocessableEntity",
    "hookimpl",
    "load_settings",
    "verify_signature",
]
