"""Gateway settings: defaults, overridden by a TOML file, overridden by the environment.

The TOML file (``TOLLWAY_CONFIG``) has a ``[gateway]`` table with the fields of
:class:`Settings` and a ``[products.<name>.plans.<plan>]`` table per plan override.
Every field can also be set as ``TOLLWAY_<FIELD>`` in the environment, which wins; any
other ``TOLLWAY_*`` variable is an error unless it is one of
:data:`OTHER_ENVIRONMENT_VARIABLES`.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from tollway.webhooks.schedule import DEFAULT_RETRY_SCHEDULE

FailurePolicy = Literal["open", "closed"]
ProductSettings = TypeVar("ProductSettings", bound=msgspec.Struct)
LogFormat = Literal["text", "json"]


class PlanOverride(msgspec.Struct, forbid_unknown_fields=True):
    """A plan's settings as written in the config file; unset fields keep the default."""

    requests_per_day: int | None = None
    features: list[str] | None = None
    rank: int | None = None
    description: str | None = None
    limits: dict[str, int] | None = None
    """Merged into the plan's named limits key by key."""
    price_cents: Annotated[int, msgspec.Meta(ge=0)] | None = None
    """What a tenant pays per ``interval``, in the minor unit of ``billing_currency``."""
    interval: Literal["month", "year"] | None = None


JobQueueKind = Literal["auto", "memory", "redis"]

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./tollway.db"


class ProductConfig(msgspec.Struct, forbid_unknown_fields=True):
    plans: dict[str, PlanOverride] = {}
    settings: dict[str, Any] = {}


class Settings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Everything a deployment can configure."""

    database_url: str = DEFAULT_DATABASE_URL
    """SQLAlchemy URL with an async driver. PostgreSQL: ``postgresql+asyncpg://user@host/db``."""

    redis_url: str | None = None
    """When set, rate limits are kept in Redis, shared by every gateway process."""

    plugins: list[str] | None = None
    """Allow-list of product plugins to load; ``None`` loads every installed one."""

    rate_limit_failure: FailurePolicy = "open"
    """What a request gets when the rate limiter backend is unreachable: ``open`` lets
    it through (and logs), ``closed`` answers 503."""

    rate_limit_prefix: str = "tollway:rl:"
    """Prefix of every rate limit key in Redis, so several deployments can share one."""

    live_channel_prefix: str = "tollway:live:"
    """Prefix of the Redis publish/subscribe channels of the real-time bus (with
    ``redis_url``): topic ``chat:1:2`` is channel ``<prefix>chat:1:2``, so several
    deployments can share one Redis."""

    redis_timeout: float = 0.25
    """Seconds a Redis call may take before the backend counts as unreachable."""

    key_cache_ttl: float = 1.0
    """Seconds an authenticated key is cached in process: the bound on how long a key
    revoked on another gateway process keeps working."""

    auto_migrate: bool = True
    """Apply database migrations on ``tollway serve``."""

    demo: bool = True
    """On an empty database in the default SQLite file, ``serve`` creates a demo account
    and prints its key; never in any other database, PostgreSQL included."""

    trusted_proxies: list[str] = []
    """Peers whose ``X-Forwarded-For`` is believed (addresses or CIDR networks)."""

    debug: bool = False

    readiness_timeout: float = 1.0
    """Seconds each ``/readyz`` check (database ``SELECT 1``, Redis ``PING``) may take
    before it counts as failed."""

    metrics_token: str | None = None
    """When set, ``/metrics`` needs ``Authorization: Bearer <metrics_token>``; unset, it
    is public."""

    log_format: LogFormat = "text"
    """``text`` leaves logging as Python and the server set it up; ``json`` writes one
    JSON object per line on stderr, with the request id of the request being served."""

    access_log: bool | None = None
    """One ``tollway.access`` line per request. Unset: on with ``log_format = "json"``,
    off with ``text``."""

    webhooks_allow_private_addresses: bool = False
    """Let webhook endpoints resolve to loopback, private, link-local and other
    non-public addresses (for tests and closed networks). Cloud metadata addresses
    stay refused."""

    webhooks_ca_file: str | None = None
    """A PEM file of extra certificate authorities trusted for webhook receivers (a
    private CA, a test certificate). TLS verification itself cannot be turned off."""

    webhooks_timeout: float = 10.0
    """Seconds one delivery attempt may take, connection and TLS included, before it
    counts as failed."""

    webhooks_poll_interval: float = 1.0
    """Seconds between each process's scans for due deliveries; an emit wakes its own
    process's dispatcher at once, so this bounds other processes and retries."""

    webhooks_retry_schedule: list[float] = msgspec.field(
        default_factory=lambda: list(DEFAULT_RETRY_SCHEDULE)
    )
    """Seconds to wait before each delivery attempt, counted from the previous one;
    one attempt per entry, then the delivery is dead-lettered."""

    job_queue: JobQueueKind = "auto"
    """Where background jobs wait: ``memory`` (in the process that enqueued them, lost
    with it), ``redis`` (SAQ on ``redis_url``, worked by any process) or ``auto``
    (``redis`` when ``redis_url`` is set)."""

    job_queue_name: str = "tollway"
    """Name of the Redis job queue, so several deployments can share one Redis."""

    run_jobs: bool = True
    """This process works background jobs. Set it to false on gateways when separate
    ``tollway worker`` processes do the work (Redis queue only)."""

    job_concurrency: int = 8
    """Jobs one process runs at once."""

    job_timeout: float = 3600.0
    """Seconds a job may run before it is cancelled (and retried)."""

    job_heartbeat: float = 15.0
    """Seconds after which a running job whose process stopped beating is taken for
    dead and run again (Redis queue only)."""

    job_retries: int = 3
    """Attempts a job gets in all on the Redis queue (a crash or an error uses one)."""

    idempotency_key_ttl: Annotated[int, msgspec.Meta(ge=1)] = 86_400
    """Seconds an ``Idempotency-Key`` and its answer are kept, counted from the first
    request; an older key counts as new."""

    billing_currency: Annotated[str, msgspec.Meta(pattern="^[a-z]{3}$")] = "usd"
    """The currency the platform bills its tenants in (ISO 4217, lowercase); plans'
    ``price_cents`` are in its minor unit."""

    billing_retry_days: list[Annotated[int, msgspec.Meta(ge=1)]] = msgspec.field(
        default_factory=lambda: [1, 3, 5]
    )
    """Days from one failed renewal charge of a tenant to the next try; after the last,
    the subscription is ``unpaid`` (the product refused) until the invoice is paid."""

    products: dict[str, ProductConfig] = {}
    """Per-product plan overrides and product settings, from the config file only."""

    def __post_init__(self) -> None:
        _check_database_url(self.database_url)

    @property
    def uses_default_database(self) -> bool:
        """Whether ``database_url`` names the default SQLite file, however written."""
        url, default = make_url(self.database_url), make_url(DEFAULT_DATABASE_URL)
        return (
            url.get_backend_name() == "sqlite"
            and url.database is not None
            and Path(url.database).resolve() == Path(default.database or "").resolve()
        )

    def product(self, name: str) -> ProductConfig:
        return self.products.get(name) or ProductConfig()

    def product_settings(self, name: str, kind: type[ProductSettings]) -> ProductSettings:
        """``[products.<name>.settings]`` converted into ``kind``, the product's settings
        Struct; ``ValueError`` naming the table and the key otherwise. The gateway reads
        each product's so at start-up (``Gateway.product_settings``); a command that
        has no gateway reads them here."""
        try:
            return msgspec.convert(self.product(name).settings, kind, strict=False)
        except (msgspec.ValidationError, ValueError) as error:
            raise ValueError(f"invalid [products.{name}.settings]: {error}") from None


def _check_database_url(value: str) -> None:
    """Refuse a URL the engine could not use, naming the setting, before anything
    connects (the password never appears in the message)."""
    try:
        url = make_url(value)
    except ArgumentError:
        raise ValueError(
            "database_url is not a database URL; for example sqlite+aiosqlite:///./tollway.db "
            "or postgresql+asyncpg://user@host/db"
        ) from None
    shown = url.render_as_string(hide_password=True)
    try:
        dialect = url.get_dialect()
    except ArgumentError:
        raise ValueError(
            f"database_url {shown}: SQLAlchemy knows no database {url.drivername!r}"
        ) from None
    if not dialect.is_async:
        raise ValueError(
            f"database_url {shown} names a synchronous driver; use sqlite+aiosqlite:// "
            "or postgresql+asyncpg://"
        )
    try:
        dialect.import_dbapi()
    except ImportError as error:
        raise ValueError(
            f"database_url {shown} needs a driver that is not installed: {error}"
        ) from None


_ENV_PREFIX = "TOLLWAY_"

OTHER_ENVIRONMENT_VARIABLES: dict[str, str] = {
    "TOLLWAY_CONFIG": "the TOML config file load_settings reads",
    "TOLLWAY_KEY": "the API key tollway-harness tests with",
    "TOLLWAY_CONTRACTS": "the contracts directory tollway-harness reads",
    "TOLLWAY_TEST_POSTGRES_URL": "the PostgreSQL server tollway.testing makes test databases on",
    "TOLLWAY_TEST_REDIS_URL": "the Redis server of the tests",
    "TOLLWAY_TEST_BACKENDS": "the backends the tests run on (tollway.testing)",
    "TOLLWAY_TEST_WORKERS": "the test processes of nox -s tests",
    "TOLLWAY_BENCH_REDIS_URL": "the Redis server of the benchmarks (bench/)",
}
"""The ``TOLLWAY_*`` variables that are not settings, each with who reads it. Any other
``TOLLWAY_*`` variable that names no setting stops start-up: a misspelt setting would
otherwise leave its default in force without a word."""

_BOOLEANS = {
    **dict.fromkeys(("1", "true", "yes", "on"), True),
    **dict.fromkeys(("0", "false", "no", "off"), False),
}
"""What a boolean setting accepts in the environment (any case); anything else is an
error, so ``TOLLWAY_DEMO=flase`` cannot pass for false."""
_LIST_FIELDS = ("plugins", "trusted_proxies", "webhooks_retry_schedule", "billing_retry_days")
"""Fields written comma-separated in the environment."""


def _environment_names() -> dict[str, str]:
    """Each setting's environment variable, with its field (``products`` is only in
    the config file)."""
    return {
        _ENV_PREFIX + field.name.upper(): field.name
        for field in msgspec.structs.fields(Settings)
        if field.name != "products"
    }


def _check_environment_names(environ: Mapping[str, str]) -> None:
    """Refuse a non-empty ``TOLLWAY_*`` variable that is neither a setting nor one of
    :data:`OTHER_ENVIRONMENT_VARIABLES`, suggesting the closest known name."""
    known = [*_environment_names(), *OTHER_ENVIRONMENT_VARIABLES]
    unknown = sorted(
        name
        for name, value in environ.items()
        if name.startswith(_ENV_PREFIX) and value and name not in known
    )
    if not unknown:
        return
    # Compared without the prefix: every name has it, which makes any two look alike.
    close = difflib.get_close_matches(
        unknown[0].removeprefix(_ENV_PREFIX),
        [name.removeprefix(_ENV_PREFIX) for name in known],
        n=1,
        cutoff=0.7,
    )
    hint = f" (did you mean {_ENV_PREFIX}{close[0]}?)" if close else ""
    raise ValueError(
        f"invalid tollway configuration: unknown environment variable {unknown[0]}{hint}"
    )


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings the environment sets, by field name: lists split, booleans read
    strictly, other values left as the strings they are."""
    values: dict[str, Any] = {}
    types = {field.name: field.type for field in msgspec.structs.fields(Settings)}
    for variable, name in _environment_names().items():
        raw = environ.get(variable)
        if raw is None or raw == "":
            continue
        if name in _LIST_FIELDS:
            values[name] = [item.strip() for item in raw.split(",") if item.strip()]
        elif types[name] in (bool, bool | None):
            if (boolean := _BOOLEANS.get(raw.strip().lower())) is None:
                raise ValueError(
                    f"invalid tollway configuration: {variable}={raw!r} is not a boolean; "
                    "use 1 or 0, true or false, yes or no, on or off"
                )
            values[name] = boolean
        else:
            values[name] = raw
    return values


def _check_env_types(from_env: dict[str, Any]) -> None:
    """Convert each value from the environment on its own, so that a number that is
    not one is refused naming its variable, not only the field."""
    types = {field.name: field.type for field in msgspec.structs.fields(Settings)}
    for name, value in from_env.items():
        try:
            msgspec.convert(value, types[name], strict=False)
        except msgspec.ValidationError as error:
            variable = _ENV_PREFIX + name.upper()
            raise ValueError(
                f"invalid tollway configuration: {variable} ({name}): {error}"
            ) from None


def load_settings(
    config_path: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Build settings from the TOML file, then the environment, then ``overrides``.

    ``config_path`` defaults to ``TOLLWAY_CONFIG``. Raises ``ValueError`` with the
    offending file, field or environment variable named when the file cannot be read
    or is not TOML, a value is unknown, of the wrong type or unusable
    (``database_url``), or a ``TOLLWAY_*`` variable names no setting.
    """
    env = os.environ if environ is None else environ
    _check_environment_names(env)
    from_env = _from_env(env)
    _check_env_types(from_env)
    path = config_path or env.get("TOLLWAY_CONFIG")
    values: dict[str, Any] = _read_config(Path(path)) if path else {}
    values.update(from_env)
    values.update({key: value for key, value in overrides.items() if value is not None})
    try:
        return msgspec.convert(values, Settings, strict=False)
    except msgspec.ValidationError as error:
        raise ValueError(f"invalid tollway configuration: {error}") from error


def _read_config(path: Path) -> dict[str, Any]:
    """The settings a TOML file sets: its ``[gateway]`` table and ``products``."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"cannot read config file {path}: {error.strerror}") from error
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"config file {path} is not valid TOML: {error}") from error
    gateway = document.get("gateway", {})
    if not isinstance(gateway, dict):
        raise ValueError(f"config file {path}: gateway must be a table ([gateway])")
    values = dict(gateway)
    if "products" in document:
        values["products"] = document["products"]
    return values
