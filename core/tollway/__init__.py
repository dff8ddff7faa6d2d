"""tollway: a multi-product API gateway whose products are pluggy plugins.

This module is the public front: the names plugin authors need are exported here (and
the test helpers from :mod:`tollway.testing`, the command line's from
:mod:`tollway.cli`); everything else is internal, and a test fails when a plugin
imports it.
"""

from litestar.di import NamedDependency

from tollway.accounts import AccountError
from tollway.admission import (
    DAILY,
    Access,
    BearerKey,
    BodyKey,
    CurrentCustomer,
    Customer,
    CustomerTokens,
    KeySource,
    QueryKey,
    Refusals,
    Window,
    check_sign_in,
    hash_password,
    verify_password,
    visitor_access,
)
from tollway.app import create_app, service_of
from tollway.auth import DatabaseKeyAuthenticator, KeyAuthenticator, Principal
from tollway.bodies import decode_json_body
from tollway.conditional import etag_matches
from tollway.db import (
    PAGE_LIMIT,
    PAGE_OFFSET,
    AnySelect,
    Database,
    Paged,
    Reads,
    Tally,
    UTCDateTime,
    Write,
    columns_of,
    count_of,
    escape_like,
    make_metadata,
    utcnow,
)
from tollway.db.models import Account
from tollway.errors import (
    ApiError,
    BadRequest,
    Conflict,
    ErrorMapper,
    Forbidden,
    InternalServerError,
    NotFound,
    PayloadTooLarge,
    PaymentRequired,
    ServiceUnavailable,
    StyledErrorMapper,
    TooManyRequests,
    Unauthorized,
    UnavailableForLegalReasons,
    UnprocessableEntity,
    UnsupportedMediaType,
)
from tollway.gateway import Gateway
from tollway.geoip import GeoIP, IptoccGeoIP
from tollway.hookspecs import CommandRegistrar, RouteRegistrar, ScopeRegistrar, hookimpl
from tollway.jobs import InProcessJobQueue, JobFunction, JobQueue
from tollway.live import LiveBus, LiveEvent, LocalLiveBus, RedisLiveBus, live_stream
from tollway.net import ClientAddress, PublicOrigin
from tollway.optional_bodies import optional_body_operation, optional_json_body
from tollway.outbox import LeasedColumns, Poller, after_commit, claim_due, renew
from tollway.params import MAX_ROW_ID, FilterId, Id, ListPage, Page, offset, page_limit
from tollway.pipeline import Caller, CurrentCaller
from tollway.profiles import Profile, ProfileError, check_email, check_tax_id, check_text
from tollway.ratelimit import (
    Algorithm,
    Decision,
    MemoryRateLimiter,
    Quota,
    RateLimiter,
    RedisRateLimiter,
)
from tollway.registry import Plan, Product, RegistrationError, Registry
from tollway.reports import (
    GRANULARITIES,
    Column,
    Days,
    Granularity,
    Period,
    Report,
    ReportData,
    day_of,
    decimal_text,
    first_day,
    in_period,
    local_day,
    shown,
    summed_by_day,
    utc_instant,
)
from tollway.scopes import ScopeChecker
from tollway.secrets import deployment_secret, signature
from tollway.segmentation import Segmenter
from tollway.settings import Settings, load_settings
from tollway.webhooks import (
    EVENT_HEADER,
    SIGNATURE_HEADER,
    EndpointInfo,
    WebhookEngine,
    WebhookError,
    WebhookSigner,
    verify_signature,
)
from tollway.webhooks.ssrf import MAX_URL_LENGTH, GuardedNetworkBackend

CurrentGateway = NamedDependency[Gateway]
"""Annotate a handler parameter named ``gateway`` with this to receive the gateway."""

__all__ = [
    "DAILY",
    "EVENT_HEADER",
    "GRANULARITIES",
    "MAX_ROW_ID",
    "MAX_URL_LENGTH",
    "PAGE_LIMIT",
    "PAGE_OFFSET",
    "SIGNATURE_HEADER",
    "Access",
    "Account",
    "AccountError",
    "Algorithm",
    "AnySelect",
    "ApiError",
    "BadRequest",
    "BearerKey",
    "BodyKey",
    "Caller",
    "ClientAddress",
    "Column",
    "CommandRegistrar",
    "Conflict",
    "CurrentCaller",
    "CurrentCustomer",
    "CurrentGateway",
    "Customer",
    "CustomerTokens",
    "Database",
    "DatabaseKeyAuthenticator",
    "Days",
    "Decision",
    "EndpointInfo",
    "ErrorMapper",
    "FilterId",
    "Forbidden",
    "Gateway",
    "GeoIP",
    "Granularity",
    "GuardedNetworkBackend",
    "Id",
    "InProcessJobQueue",
    "InternalServerError",
    "IptoccGeoIP",
    "JobFunction",
    "JobQueue",
    "KeyAuthenticator",
    "KeySource",
    "LeasedColumns",
    "ListPage",
    "LiveBus",
    "LiveEvent",
    "LocalLiveBus",
    "MemoryRateLimiter",
    "NotFound",
    "Page",
    "Paged",
    "PayloadTooLarge",
    "PaymentRequired",
    "Period",
    "Plan",
    "Poller",
    "Principal",
    "Product",
    "Profile",
    "ProfileError",
    "PublicOrigin",
    "QueryKey",
    "Quota",
    "RateLimiter",
    "Reads",
    "RedisLiveBus",
    "RedisRateLimiter",
    "Refusals",
    "RegistrationError",
    "Registry",
    "Report",
    "ReportData",
    "RouteRegistrar",
    "ScopeChecker",
    "ScopeRegistrar",
    "Segmenter",
    "ServiceUnavailable",
    "Settings",
    "StyledErrorMapper",
    "Tally",
    "TooManyRequests",
    "UTCDateTime",
    "Unauthorized",
    "UnavailableForLegalReasons",
    "UnprocessableEntity",
    "UnsupportedMediaType",
    "WebhookEngine",
    "WebhookError",
    "WebhookSigner",
    "Window",
    "Write",
    "after_commit",
    "check_email",
    "check_sign_in",
    "check_tax_id",
    "check_text",
    "claim_due",
    "columns_of",
    "count_of",
    "create_app",
    "day_of",
    "decimal_text",
    "decode_json_body",
    "deployment_secret",
    "escape_like",
    "etag_matches",
    "first_day",
    "hash_password",
    "hookimpl",
    "in_period",
    "live_stream",
    "load_settings",
    "local_day",
    "make_metadata",
    "offset",
    "optional_body_operation",
    "optional_json_body",
    "page_limit",
    "renew",
    "service_of",
    "shown",
    "signature",
    "summed_by_day",
    "utc_instant",
    "utcnow",
    "verify_password",
    "verify_signature",
    "visitor_access",
]
