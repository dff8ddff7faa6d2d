"""pytest fixtures for testing tollway and its plugins against real backends.

Loaded automatically (``pytest11`` entry point). Tests that take ``gateway_factory``
run twice: on SQLite with the in-memory limiter, and on PostgreSQL with Redis. When
PostgreSQL or Redis cannot be reached the PostgreSQL run is skipped locally and fails
under ``CI=true``.

Settings: ``TOLLWAY_TEST_POSTGRES_URL`` (default the local ``test`` database, used to
create a throwaway database per session), ``TOLLWAY_TEST_REDIS_URL``, and
``TOLLWAY_TEST_BACKENDS`` (``sqlite``, ``postgresql`` or both, comma-separated).

A plugin whose product needs settings to run in tests at all (a model file, say)
implements the pytest hook ``pytest_tollway_product_settings`` in a pytest plugin of
its own; :func:`product_test_settings` collects the answers (the contract tests use
it).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import msgspec
import pytest
from sqlalchemy import text

from tollway.app import create_app
from tollway.gateway import Gateway
from tollway.settings import load_settings

if TYPE_CHECKING:
    from tollway.webhooks.testing import WebhookTestReceiver

POSTGRES_URL = os.environ.get(
    "TOLLWAY_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("TOLLWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
BACKENDS = [
    name.strip()
    for name in os.environ.get("TOLLWAY_TEST_BACKENDS", "sqlite,postgresql").split(",")
    if name.strip()
]


class _ProductSettingsSpec:
    @staticmethod
    @pytest.hookspec
    def pytest_tollway_product_settings(
        product: str, tmp_path_factory: pytest.TempPathFactory
    ) -> dict[str, Any] | None:
        """``[products.<product>.settings]`` the product needs in a test gateway, or
        ``None`` for another plugin's product."""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(_ProductSettingsSpec)


def product_test_settings(
    config: pytest.Config, product: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """What every ``pytest_tollway_product_settings`` implementation answers for
    ``product``, merged."""
    merged: dict[str, Any] = {}
    answers = config.hook.pytest_tollway_product_settings(
        product=product, tmp_path_factory=tmp_path_factory
    )
    for answer in reversed(answers):
        merged.update(answer)
    return merged


def unavailable(reason: str) -> None:
    """Skip locally, fail in CI: a backend test must never pass by not running."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"backend unavailable in CI: {reason}")
    pytest.skip(reason)


@dataclass(frozen=True)
class Backend:
    name: str
    database_url: str
    redis_url: str | None


async def _create_postgres_database() -> str:
    import asyncpg  # type: ignore[import-untyped]

    name = f"tollway_test_{secrets.token_hex(4)}"
    connection = await asyncpg.connect(POSTGRES_URL, timeout=5)
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    base = POSTGRES_URL.rsplit("/", 1)[0]
    return f"{base}/{name}".replace("postgresql://", "postgresql+asyncpg://", 1)


async def _drop_postgres_database(url: str) -> None:
    import asyncpg

    name = url.rsplit("/", 1)[1]
    connection = await asyncpg.connect(POSTGRES_URL, timeout=5)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


async def _redis_reachable(url: str) -> bool:
    import redis.asyncio as redis

    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        return bool(await client.ping())
    except (OSError, redis.ConnectionError):
        return False
    finally:
        await client.aclose()


@pytest.fixture(scope="session", params=BACKENDS)
async def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Backend]:
    """A database (and Redis for PostgreSQL) for this test session."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "tollway.db"
        yield Backend("sqlite", f"sqlite+aiosqlite:///{path}", None)
        return
    try:
        url = await _create_postgres_database()
    except Exception as error:  # asyncpg raises its own errors besides OSError
        unavailable(f"PostgreSQL at {POSTGRES_URL} unreachable: {error}")
        return
    if not await _redis_reachable(REDIS_URL):
        await _drop_postgres_database(url)
        unavailable(f"Redis at {REDIS_URL} unreachable")
        return
    try:
        yield Backend("postgresql", url, REDIS_URL)
    finally:
        await _drop_postgres_database(url)


GatewayFactory = Callable[..., Awaitable[Gateway]]


async def _clear(gateway: Gateway) -> None:
    tables = [table for item in gateway.registry.models for table in item.metadata.sorted_tables]
    async with gateway.database.transaction() as session:
        if gateway.database.is_sqlite:
            for table in reversed(tables):
                await session.execute(table.delete())
        else:
            names = ", ".join(f'"{table.name}"' for table in tables)
            await session.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))


@pytest.fixture
async def gateway_factory(backend: Backend) -> AsyncIterator[GatewayFactory]:
    """``await gateway_factory(plugins=[...], extra_plugins=[(name, obj)], **settings)``:
    a migrated gateway on an empty database with its own rate limit namespace.

    ``isolated=True`` gives the gateway a database of its own instead of the session's,
    for plugins whose migrations the other tests' gateways do not know.
    """
    made: list[Gateway] = []
    own_databases: list[str] = []

    async def make(
        plugins: list[str] | None = None,
        extra_plugins: Iterable[tuple[str, object]] = (),
        *,
        isolated: bool = False,
        **overrides: Any,
    ) -> Gateway:
        database_url = backend.database_url
        if isolated and backend.name == "sqlite":
            database_url = database_url.replace(".db", f"-{secrets.token_hex(4)}.db")
        elif isolated:
            database_url = await _create_postgres_database()
            own_databases.append(database_url)
        namespace = secrets.token_hex(6)
        options: dict[str, Any] = {
            "database_url": database_url,
            "redis_url": backend.redis_url,
            "rate_limit_prefix": f"tollway-test:{namespace}:",
            "job_queue_name": f"tollway-test-{namespace}",
            "demo": False,
        }
        options.update(overrides)
        settings = load_settings(environ={}, plugins=plugins, **options)
        gateway = Gateway(settings, extra_plugins=extra_plugins)
        made.append(gateway)
        await gateway.migrate()
        await _clear(gateway)
        return gateway

    yield make
    for gateway in made:
        await gateway.database.dispose()
    for url in own_databases:
        await _drop_postgres_database(url)


@asynccontextmanager
async def gateway_client(
    gateway: Gateway, client_address: str = "127.0.0.1"
) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to the gateway's app in-process, on the test's own event
    loop (database connections are bound to it), with the app's lifespan run around.
    Requests come from ``client_address`` as the socket peer."""
    app = create_app(gateway)
    transport = httpx.ASGITransport(app=app, client=(client_address, 50000))  # type: ignore[arg-type]
    async with (
        app.lifespan(),
        httpx.AsyncClient(transport=transport, base_url="http://testserver") as client,
    ):
        yield client


@dataclass(frozen=True)
class RawAnswer:
    """What :func:`raw_request` got back."""

    status: int
    body: bytes

    def json(self) -> Any:
        return msgspec.json.decode(self.body)


async def raw_request(
    app: Any,
    method: str,
    path: str,
    *,
    query: bytes = b"",
    headers: Iterable[tuple[bytes, bytes]] = (),
    body: bytes = b"",
) -> RawAnswer:
    """One request straight through ``app``'s ASGI interface, with the query string,
    headers and body as raw bytes: what HTTP clients (httpx included) refuse to send,
    such as raw non-ASCII in a query, which browsers do send. For hostile-input tests.
    Run ``app``'s lifespan around it where its routes need the gateway started."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def collect(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, collect)
    [start] = [message for message in sent if message["type"] == "http.response.start"]
    content = b"".join(message.get("body", b"") for message in sent[1:])
    return RawAnswer(start["status"], content)


@dataclass(frozen=True)
class Tenant:
    """An account and one key of it, calling the gateway in a test."""

    account_id: int
    key_id: int
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


async def tenant(
    gateway: Gateway,
    name: str,
    *,
    plans: Mapping[str, str],
    scopes: Iterable[str],
    admin: bool = False,
) -> Tenant:
    """A new account subscribed to ``plans`` (``{product: plan}``) and one key of it
    (named like the account) with ``scopes``."""
    account = await gateway.accounts.create_account(name, plans)
    created = await gateway.accounts.create_key(account, name=name, scopes=scopes, admin=admin)
    return Tenant(account, created.id, created.key)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """A throwaway ``redis-server`` a test may stop and start (never the shared one),
    for outage and recovery tests."""

    def __init__(self, port: int, binary: str = "redis-server") -> None:
        self.binary = binary
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(
            [
                *(self.binary, "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 5
        try:
            while True:
                try:
                    client.ping()
                    return
                except redis.exceptions.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=5)
            self.process = None

    def info(self, section: str) -> dict[str, Any]:
        import redis

        client = redis.Redis(port=self.port)
        try:
            info: dict[str, Any] = client.info(section)
            return info
        finally:
            client.close()


class PostgresServer:
    """A throwaway PostgreSQL cluster (``initdb`` in a temporary directory, trust auth,
    127.0.0.1 on a free port) a test may stop and start: never the shared server.
    Run as the ``postgres`` system user when the test runs as root, as initdb
    requires."""

    def __init__(self, directory: Path, port: int, bin_dir: Path) -> None:
        self.directory = directory
        self.port = port
        self.bin_dir = bin_dir
        self.url = f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres"

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(
            [*prefix, *command], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def init(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        data = str(self.directory / "data")
        self._run(
            str(self.bin_dir / "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"
        )

    def start(self) -> None:
        data = self.directory / "data"
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory} -F"
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """``fast`` drops connections like a restart does; ``immediate`` like a crash."""
        data = self.directory / "data"
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(data), "-m", mode, "-w", "stop")


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A private, running PostgreSQL cluster on a free port, removed afterwards."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    initdb = shutil.which("initdb")
    bin_dir = Path(initdb).parent if initdb else (found[-1].parent if found else None)
    if bin_dir is None:
        unavailable("PostgreSQL's initdb is not installed")
    assert bin_dir is not None
    # Not under pytest's temporary directory: the postgres user cannot enter it.
    directory = Path(tempfile.mkdtemp(prefix="tollway-postgres-"))
    server = PostgresServer(directory, free_port(), bin_dir)
    try:
        server.init()
        server.start()
        yield server
        with contextlib.suppress(subprocess.CalledProcessError):
            server.stop("immediate")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A private, running ``redis-server`` on a free port, stopped afterwards."""
    binary = shutil.which("redis-server")
    if binary is None:
        unavailable("redis-server is not on PATH")
    assert binary is not None
    server = RedisServer(free_port(), binary)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def webhook_certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (trust it with the
    ``webhooks_ca_file`` setting)."""
    from tollway.webhooks.testing import make_certificate

    if shutil.which("openssl") is None:
        unavailable("openssl is needed to make the receiver's certificate")
    return make_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
async def webhook_receiver(
    webhook_certificate: tuple[Path, Path],
) -> AsyncIterator[WebhookTestReceiver]:
    """A running HTTPS receiver on loopback; ``trust(secret)`` before deliveries."""
    from tollway.webhooks.testing import WebhookTestReceiver

    server = WebhookTestReceiver(*webhook_certificate)
    await server.start()
    yield server
    await server.stop()


def deployment_settings(gateway: Gateway) -> dict[str, Any]:
    """Settings under which a :class:`GatewayProcess` or :class:`WorkerProcess` joins
    ``gateway``'s deployment: the same database, Redis, rate limit namespace and job
    queue."""
    settings = gateway.settings
    joined: dict[str, Any] = {
        "database_url": settings.database_url,
        "rate_limit_prefix": settings.rate_limit_prefix,
        "job_queue_name": settings.job_queue_name,
    }
    if settings.redis_url:
        joined["redis_url"] = settings.redis_url
    return joined


class GatewayProcess:
    """``tollway serve`` in a process of its own, on a free port of 127.0.0.1, for tests
    whose behaviour crosses processes. ``settings`` become ``TOLLWAY_*`` variables (the
    test's own ``TOLLWAY_*`` environment is left out), ``config`` is a TOML file. Use it
    as a context manager, or :meth:`start` and :meth:`stop` (SIGTERM, then SIGKILL) or
    :meth:`kill` (SIGKILL)."""

    command = "serve"

    def __init__(
        self,
        *,
        plugins: Iterable[str] | None = None,
        cwd: Path | None = None,
        config: Path | None = None,
        ready_path: str = "/healthz",
        **settings: Any,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ready_path = ready_path
        env = {key: value for key, value in os.environ.items() if not key.startswith("TOLLWAY_")}
        env["TOLLWAY_DEMO"] = "false"
        if config is not None:
            env["TOLLWAY_CONFIG"] = str(config)
        for name, value in settings.items():
            env[f"TOLLWAY_{name.upper()}"] = str(value)
        self._env = env
        self._arguments = self._command_arguments()
        if plugins is not None:
            self._arguments += ["--plugins", ",".join(plugins)]
        self._cwd = cwd
        self.process: subprocess.Popen[bytes] | None = None
        # Open for the object's life: tests read the log after the process ended.
        self._log = tempfile.TemporaryFile()  # noqa: SIM115

    def _command_arguments(self) -> list[str]:
        return ["serve", "--host", "127.0.0.1", "--port", str(self.port)]

    @property
    def log(self) -> str:
        """What the process wrote to stderr so far."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def start(self, timeout: float = 60.0) -> GatewayProcess:
        binary = shutil.which("tollway")
        if binary is None:
            raise RuntimeError("the tollway command is not installed")
        self.process = subprocess.Popen(
            [binary, *self._arguments],
            env=self._env,
            cwd=self._cwd,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"tollway {self.command} exited with {self.process.returncode}:\n{self.log}"
                )
            if self._ready():
                return self
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"tollway {self.command} not ready within {timeout} s")
            time.sleep(0.1)

    def _ready(self) -> bool:
        try:
            httpx.get(f"{self.url}{self.ready_path}", timeout=2)
        except httpx.TransportError:
            return False
        return True

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``; then whatever the process started
        (a server's workers, one still starting when told to stop) is killed with it."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._kill_group()

    def kill(self) -> None:
        """SIGKILL, as a crash would: the process and everything it started."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._kill_group()

    def _kill_group(self) -> None:
        assert self.process is not None
        # start_new_session made the process the leader of a group of its own.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def __enter__(self) -> GatewayProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class WorkerProcess(GatewayProcess):
    """``tollway worker`` in a process of its own (same settings as
    :class:`GatewayProcess`); ready once it says so on stderr."""

    command = "worker"

    def _command_arguments(self) -> list[str]:
        return ["worker"]

    def _ready(self) -> bool:
        return "worker ready" in self.log
