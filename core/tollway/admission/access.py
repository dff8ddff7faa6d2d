"""How a route admits requests, declared once in its ``opt``, checked at registration.

Most routes need only the shorthand: ``@get("/x", scope="chat:messages:read")``,
``admin=True`` or ``public=True``. A route admitting requests any other way declares
an :class:`Access`, composed from the steps every product shares:

* where the API key comes from: the ``Authorization: Bearer`` header (default), a
  query parameter (:class:`QueryKey`), a JSON body field (:class:`BodyKey`), or
  nowhere (``key=None``);
* what a request without a key gets: refused (default), or a plan of its own counted
  per client address (``anonymous="anonymous"``);
* the principal's subscription, scope and admin rights (``scope``, ``admin``,
  ``key_scope_only`` for keys that travel in URLs);
* the rate limit window counted (:class:`Window`: the plan's daily quota by default,
  or one of its named limits per minute);
* an end customer's token in addition to the key (``customer=True``: an
  ``X-Customer-Token`` issued by :class:`tollway.CustomerTokens` for the product).

The public QR API is the example of a composed one::

    Access(key=QueryKey("api_key"), anonymous="anonymous", scope="qr:generate",
           key_scope_only=True, window=Window("image_per_minute", 60, SLIDING, "image"))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tollway.errors import ApiError, TooManyRequests
from tollway.ratelimit import Algorithm, Decision

if TYPE_CHECKING:
    from litestar import Request

    from tollway.registry import Plan, Product

DAY = 86_400


class KeySource(Protocol):
    """Where a route finds the API key of a request."""

    @property
    def name(self) -> str:
        """How refusals name the key: ``API key``, ``api_key``."""
        ...

    @property
    def reads_body(self) -> bool:
        """Whether finding the key needs the request body (never available to reports)."""
        ...

    async def key(self, request: Request[Any, Any, Any]) -> str | None:
        """The key the request presents, or ``None``."""
        ...


@dataclass(frozen=True, slots=True)
class BearerKey:
    """``Authorization: Bearer <key>``: the gateway's default."""

    name: str = "API key"
    reads_body: bool = False

    async def key(self, request: Request[Any, Any, Any]) -> str | None:
        return bearer_token(request.scope["headers"])


@dataclass(frozen=True, slots=True)
class QueryKey:
    """A query parameter (``?api_key=``), for URLs that must work without headers
    (an ``<img src>``)."""

    name: str

    reads_body: bool = False

    async def key(self, request: Request[Any, Any, Any]) -> str | None:
        value: str | None = request.query_params.get(self.name)
        return value


@dataclass(frozen=True, slots=True)
class BodyKey:
    """A field of the route's JSON body. The body is decoded once, strictly, into the
    handler's ``data`` type; a body that cannot be decoded presents no key (the body
    step that follows answers it)."""

    name: str

    reads_body: bool = True

    async def key(self, request: Request[Any, Any, Any]) -> str | None:
        from tollway.bodies import key_field, read_body  # bodies needs the state first

        body = await read_body(request)
        if body is None:
            # Invalid as a whole, the body may still name a key: the request then
            # counts against that key's window before its 400, as a valid one would.
            return key_field(await request.body(), self.name)
        value = getattr(body, self.name, None)
        return value if isinstance(value, str) else None


BEARER = BearerKey()

_BEARER = b"bearer "


def bearer_token(headers: Any) -> str | None:
    """The token of an ``Authorization: Bearer`` header in ASGI ``headers``."""
    for name, value in headers:
        if name == b"authorization":
            return bearer_of(value)
    return None


def bearer_of(authorization: bytes | None) -> str | None:
    """The token of an ``Authorization`` header's value, when it is ``Bearer <token>``."""
    if authorization is None or authorization[:7].lower() != _BEARER:
        return None
    # Stripped as text: Latin-1 has whitespace (U+0085, U+00A0) bytes lack.
    token: str = authorization[7:].decode("latin-1").strip()
    return token


@dataclass(frozen=True, slots=True)
class Window:
    """The rate limit window a route's requests count against."""

    limit: str | None = None
    """The plan's named limit (``Plan.limits``); ``None``: ``requests_per_day``."""
    seconds: int = DAY
    algorithm: Algorithm = Algorithm.FIXED_WINDOW
    counter: str = ""
    """Names a counter of its own (the public QR API counts image and JSON requests
    apart); empty: the product's one counter."""
    per_key: bool = False
    """Count per API key rather than per account."""

    def limit_of(self, plan: Plan) -> int:
        if self.limit is None:
            return plan.requests_per_day
        return int(plan.limits.get(self.limit, 0))

    @property
    def policy(self) -> str:
        """The window's name in the ``RateLimit-Policy`` header."""
        return self.counter or ("daily" if self.seconds == DAY else "default")


DAILY = Window()
"""The product's daily quota (``Plan.requests_per_day``), per account, midnight to
midnight UTC: what a shorthand ``scope=...`` route counts."""

TooMany = Callable[[Decision, "Product", "Plan", "Mapping[str, Plan]"], ApiError]
"""Makes the 429 of a window: ``(decision, product, plan, the product's plans)``."""


def _daily_too_many(
    decision: Decision, product: Product, plan: Plan, plans: Mapping[str, Plan]
) -> ApiError:
    return TooManyRequests(
        f"Rate limit of {decision.limit} requests per day for the '{product.name}' "
        f"product exceeded; retry after {decision.retry_after} s"
    )


@dataclass(frozen=True, slots=True)
class Refusals:
    """What refused requests are told. ``{product}``, ``{scope}`` and ``{key}`` (the
    key source's name) are filled in. Products whose spec words refusals its own way
    (the public QR API) give their own."""

    missing_key: str = "Missing API key: send 'Authorization: Bearer <API key>'"
    """Said when the key comes from the header; a key from elsewhere is named instead:
    ``Missing api_key``."""
    invalid_key: str = "Invalid API key"
    expired_key: str = "API key has expired"
    no_plan: str = "No active subscription to the '{product}' product"
    missing_scope: str = "API key lacks the required scope '{scope}'"
    admin_only: str = "This endpoint requires an admin API key"
    key_scope_only: str = (
        "Keys used here must hold the scope '{scope}' alone, so a leaked key exposes "
        "nothing else; create one for this use"
    )
    too_many: TooMany = _daily_too_many
    """Makes the 429."""


@dataclass(frozen=True, slots=True)
class Access:
    """How one route admits requests (see the module docstring)."""

    scope: str | None = None
    """The scope a key needs; ``None`` with ``admin=False``: any key of a subscriber."""
    admin: bool = False
    """Only admin keys (the account's own management API)."""
    public: bool = False
    """No admission at all: no key, no counting (documentation, health)."""
    key: KeySource | None = BEARER
    """Where the key comes from; ``None``: keyless, every request is anonymous."""
    anonymous: str | None = None
    """The plan of requests without a key, counted per client address; ``None``:
    such requests are refused 401. A key presented but unusable is refused after
    counting against the address, so guessing keys spends the guesser's window."""
    key_scope_only: bool = False
    """Keys may hold ``scope`` and nothing else: for keys sent in URLs."""
    window: Window = DAILY
    customer: bool = False
    """Also require an end customer's ``X-Customer-Token`` for this product."""
    report: bool = False
    """Put the caller's window (peeked, not counted) on answers admission never
    reached: 405, 413, a product ``check``'s refusal, automatic ``OPTIONS``."""
    check: Callable[[Request[Any, Any, Any]], Awaitable[None]] | None = None
    """A product's own cheap refusal run before anything is counted (the public QR
    API refuses query strings too long for any valid request with 414)."""
    refusals: Refusals = field(default_factory=Refusals)

    def problems(self, product: Product) -> list[str]:
        """What is inconsistent in this declaration (empty when it is sound)."""
        found = []
        if self.public and (self.scope or self.admin or self.customer or self.anonymous):
            found.append(
                "public=True admits everyone: it takes no scope, admin, customer or anonymous"
            )
        if self.key is None and self.anonymous is None and not self.public:
            found.append("a keyless route (key=None) needs anonymous=<plan> or public=True")
        if self.key is None and (self.scope or self.admin or self.customer):
            found.append("a keyless route (key=None) cannot require a scope, admin or a customer")
        if self.key_scope_only and self.scope is None:
            found.append("key_scope_only=True needs a scope")
        if self.customer and self.anonymous is not None:
            found.append("customer=True needs a key: it cannot be anonymous")
        return found


def access_of(opt: Mapping[str, Any], product: Product) -> Access | None:
    """The route's :class:`Access` from its ``opt`` (``access=``, or the shorthand
    ``scope=``/``admin=``/``public=``), ``None`` when it declares none."""
    declared = opt.get("access")
    shorthand = {name: opt[name] for name in ("scope", "admin", "public") if name in opt}
    if declared is not None:
        if shorthand:
            raise ValueError(f"declare access=Access(...) or {', '.join(shorthand)}=..., not both")
        if not isinstance(declared, Access):
            raise ValueError(f"access must be a tollway.Access, not {type(declared).__name__}")
        return declared
    if not shorthand:
        return Access(public=True) if not product.keyed else None
    return Access(
        scope=shorthand.get("scope"),
        admin=bool(shorthand.get("admin")),
        public=bool(shorthand.get("public")),
    )
