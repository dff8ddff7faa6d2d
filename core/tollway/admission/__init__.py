"""Composable admission: how a route lets requests in (see :mod:`.access`), and the
end-customer identity products build on (see :mod:`.customers`)."""

from tollway.admission.access import (
    BEARER,
    DAILY,
    Access,
    BearerKey,
    BodyKey,
    KeySource,
    QueryKey,
    Refusals,
    Window,
)
from tollway.admission.customers import (
    CurrentCustomer,
    Customer,
    CustomerTokens,
    check_sign_in,
    hash_password,
    verify_password,
)
from tollway.admission.visitors import visitor_access

__all__ = [
    "BEARER",
    "DAILY",
    "Access",
    "BearerKey",
    "BodyKey",
    "CurrentCustomer",
    "Customer",
    "CustomerTokens",
    "KeySource",
    "QueryKey",
    "Refusals",
    "Window",
    "check_sign_in",
    "hash_password",
    "verify_password",
    "visitor_access",
]
