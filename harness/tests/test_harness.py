"""The harness must pass a correct server and fail deliberately wrong ones.

The servers are small throwaway Litestar apps built here (`make_app`), never the real gateway.
They implement the code contract's `/v1/code/types`, `/v1/code/usage` and a stub `/v1/code/qr`
with gateway behaviour: bearer-key auth before anything else, `X-Request-ID` on every response and
the rate-limit headers on authenticated ones.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import httpx
import msgspec
import pytest
import schemathesis
import yaml
from litestar import Litestar, Response, get, post
from litestar.datastructures import MutableScopeHeaders
from litestar.exceptions import NotFoundException
from litestar.middleware import ASGIMiddleware
from litestar.params import FromPath, JSONBody
from litestar.response.base import ASGIResponse
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from tollway_harness import (
    ContractError,
    Resolver,
    check_contract,
    find_contracts_dir,
    lint_contract,
    list_products,
    load_schema,
    resolve_contract,
    run_contract,
)
from tollway_harness.pytest_plugin import ContractCheck

KEY = "tw_test_0123456789abcdef"
REPO_CONTRACTS = Path(__file__).resolve().parents[2] / "contracts"
TYPES_AND_USAGE = ["listCodeTypes", "getCodeUsage"]
FAST = 5  # max_examples for most runs: the suite must stay quick

Mode = Literal["ok", "ignore-auth", "wrong-shape", "crash", "capacity"]

# --------------------------------------------------------------------------------------------------
# Throwaway servers


Color = Annotated[str, msgspec.Meta(pattern=r"^#?[0-9a-fA-F]{6}$")]


class QrRequest(msgspec.Struct, forbid_unknown_fields=True):
    data: Annotated[str, msgspec.Meta(min_length=1, max_length=2048)]
    format: Literal["png", "svg"] = "png"
    size: Annotated[int, msgspec.Meta(ge=50, le=1000)] = 200
    ecc: Literal["L", "M", "Q", "H"] = "M"
    margin: Annotated[int, msgspec.Meta(ge=0, le=10)] = 2
    dark: Color = "000000"
    light: Color = "ffffff"


PUBLIC_PATHS = frozenset({"/v1/code/types", "/schema/openapi.json"})
# What the "capacity" server's renderer fits: less than the contract's maxLength allows.
QR_CAPACITY_BYTES = 1024


def _rate_limit_headers() -> list[tuple[bytes, bytes]]:
    reset = int(time.time()) + 3600
    return [
        (b"x-ratelimit-limit", b"1000"),
        (b"x-ratelimit-remaining", b"999"),
        (b"x-ratelimit-reset", str(reset).encode()),
        (b"ratelimit", b'"code-test";r=999;t=3600'),
        (b"ratelimit-policy", b'"code-test";q=1000;w=3600'),
    ]


def make_app(mode: Mode = "ok") -> Litestar:
    """A miniature code product behind a miniature gateway, wrong in the way `mode` says."""

    class Gateway(ASGIMiddleware):
        async def handle(
            self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp
        ) -> None:
            request_id = uuid.uuid4().hex
            public = scope["path"] in PUBLIC_PATHS

            async def send_with_headers(message: Message) -> None:
                if message["type"] == "http.response.start":
                    headers = MutableScopeHeaders.from_message(message)
                    headers["X-Request-ID"] = request_id
                    if not public:
                        for name, value in _rate_limit_headers():
                            headers[name.decode()] = value.decode()
                await send(message)

            if not public and mode != "ignore-auth":
                auth = dict(scope["headers"]).get(b"authorization", b"")
                if auth != f"Bearer {KEY}".encode():
                    refusal = ASGIResponse(
                        body=msgspec.json.encode({"detail": "Invalid or missing API key"}),
                        status_code=401,
                        media_type="application/json",
                        headers={"WWW-Authenticate": "Bearer", "X-Request-ID": request_id},
                    )
                    await refusal(scope, receive, send)
                    return
            await next_app(scope, receive, send_with_headers)

    @get("/v1/code/types")
    async def types() -> dict[str, Any]:
        item = {
            "id": "qr",
            "name": "QR code",
            "kind": "2d",
            "endpoint": "/v1/code/qr",
            "output_formats": ["png", "svg"],
            "description": "ISO/IEC 18004 QR code",
            "example": "https://example.com",
        }
        return {"data": [item], "total": 1}

    @get("/v1/code/usage")
    async def usage() -> dict[str, Any]:
        body: dict[str, Any] = {
            "product": "code",
            "plan": "pro",
            "limit": 1000,
            "used": 1,
            "remaining": 999,
            "window_start": "2025-01-01T00:00:00Z",
            "resets_at": "2025-01-02T00:00:00Z",
            "key": {"id": 1, "prefix": KEY[:8], "name": "test"},
        }
        if mode == "wrong-shape":
            body["limit"] = "1000"  # a string where the contract says integer
            del body["key"]
        return body

    @post("/v1/code/qr", status_code=200)
    async def qr(data: JSONBody[QrRequest]) -> Response[Any]:
        if mode == "capacity" and len(data.data.encode()) > QR_CAPACITY_BYTES:
            detail = f"data too long for error correction level {data.ecc}"
            return Response({"detail": detail}, status_code=400)
        if mode == "crash" and data.size > 900:
            raise RuntimeError("renderer blew up on a large image")
        if data.format == "svg":
            return Response(
                b"<svg xmlns='http://www.w3.org/2000/svg'/>", media_type="image/svg+xml"
            )
        return Response(b"\x89PNG\r\n\x1a\n", media_type="image/png")

    @get("/schema/openapi.json", media_type="application/json")
    async def served() -> dict[str, Any]:
        return served_document()

    return Litestar([types, usage, qr, served], middleware=[Gateway()], openapi_config=None)


# --------------------------------------------------------------------------------------------------
# In-process runs


def _checks(report: Any) -> set[str]:
    return {failure.check for failure in report.failures}


def test_correct_server_passes_types_and_usage() -> None:
    report = check_contract(
        "code",
        app=make_app("ok"),
        key=KEY,
        contracts_dir=REPO_CONTRACTS,
        operation_ids=TYPES_AND_USAGE,
        max_examples=FAST,
    )
    assert report.ok
    assert set(report.operations) == {"GET /v1/code/types", "GET /v1/code/usage"}
    assert report.operations["GET /v1/code/usage"].statuses[200] > 0
    assert report.phases["coverage"] == "ok"
    assert report.phases["fuzzing"] == "ok"
    assert report.phases["stateful"].startswith("skipped")  # the code contract has no links


def test_correct_server_passes_qr_with_negative_data() -> None:
    report = check_contract(
        "code",
        app=make_app("ok"),
        key=KEY,
        contracts_dir=REPO_CONTRACTS,
        operation_ids=["generateQr"],
        max_examples=FAST,
    )
    stats = report.operations["POST /v1/code/qr"]
    assert stats.statuses[200] > 0  # positive cases rendered
    assert stats.statuses[400] > 0  # negative cases rejected
    assert stats.statuses[401] > 0  # requests without the key rejected


def test_server_ignoring_auth_fails() -> None:
    report = run_contract(
        "code",
        app=make_app("ignore-auth"),
        key=KEY,
        contracts_dir=REPO_CONTRACTS,
        operation_ids=TYPES_AND_USAGE,
        max_examples=FAST,
    )
    assert not report.ok
    assert "ignored_auth" in _checks(report)
    assert {f.operation for f in report.failures} == {"GET /v1/code/usage"}  # types is public


def test_wrong_key_fails_as_missing_auth() -> None:
    report = run_contract(
        "code",
        app=make_app("ok"),
        key="tw_not_a_valid_key",
        contracts_dir=REPO_CONTRACTS,
        operation_ids=TYPES_AND_USAGE,
        max_examples=FAST,
    )
    assert _checks(report) == {"missing_auth"}
    assert [f.operation for f in report.failures] == ["GET /v1/code/usage"]


def test_no_key_fails_as_missing_auth() -> None:
    report = run_contract(
        "code",
        app=make_app("ok"),
        contracts_dir=REPO_CONTRACTS,
        operation_ids=TYPES_AND_USAGE,
        max_examples=FAST,
    )
    assert _checks(report) == {"missing_auth"}


def test_wrong_body_shape_fails() -> None:
    with pytest.raises(AssertionError) as excinfo:
        check_contract(
            "code",
            app=make_app("wrong-shape"),
            key=KEY,
            contracts_dir=REPO_CONTRACTS,
            operation_ids=TYPES_AND_USAGE,
            max_examples=FAST,
        )
    text = str(excinfo.value)
    assert "response_schema_conformance" in text
    assert "GET /v1/code/usage" in text
    assert "curl" in text  # a reproduction is part of the report
    assert KEY not in text  # ... with the credentials filtered out


def test_server_error_on_some_input_fails() -> None:
    report = run_contract(
        "code",
        app=make_app("crash"),
        key=KEY,
        contracts_dir=REPO_CONTRACTS,
        operation_ids=["generateQr"],
        max_examples=FAST,
    )
    assert "not_a_server_error" in _checks(report)
    crash = next(f for f in report.failures if f.check == "not_a_server_error")
    assert crash.status_code == 500
    assert crash.operation == "POST /v1/code/qr"


def test_domain_rejections_are_accepted_only_where_declared(tmp_path: Path) -> None:
    # The renderer refuses schema-valid data it cannot fit; code.yaml declares that with
    # `x-domain-rejections: ["400"]` on generateQr, so the harness accepts it ...
    report = check_contract(
        "code",
        app=make_app("capacity"),
        key=KEY,
        contracts_dir=REPO_CONTRACTS,
        operation_ids=["generateQr"],
        max_examples=FAST,
    )
    assert report.operations["POST /v1/code/qr"].positive_statuses[400] > 0
    # ... and without the declaration it is a positive_data_acceptance failure.
    shutil.copy(REPO_CONTRACTS / "common.yaml", tmp_path / "common.yaml")
    text = (REPO_CONTRACTS / "code.yaml").read_text()
    (tmp_path / "code.yaml").write_text(text.replace("x-domain-rejections:", "x-other:"))
    report = run_contract(
        "code",
        app=make_app("capacity"),
        key=KEY,
        contracts_dir=tmp_path,
        operation_ids=["generateQr"],
        max_examples=FAST,
    )
    assert _checks(report) == {"positive_data_acceptance"}


def test_run_is_deterministic() -> None:
    def run() -> dict[str, dict[int, int]]:
        report = run_contract(
            "code",
            app=make_app("ok"),
            key=KEY,
            contracts_dir=REPO_CONTRACTS,
            operation_ids=["generateQr"],
            max_examples=FAST,
        )
        return {label: dict(stats.statuses) for label, stats in report.operations.items()}

    assert run() == run()


def test_pytest_fixture_runs_in_process(tollway_check: ContractCheck) -> None:
    report = tollway_check(
        REPO_CONTRACTS / "code.yaml",
        app=make_app("ok"),
        key=KEY,
        operation_ids=TYPES_AND_USAGE,
        max_examples=FAST,
    )
    assert report.ok


@pytest.mark.parametrize("mode", ["ok", "ignore-auth"])
def test_load_schema_for_parametrized_tests(mode: Mode) -> None:
    schema = load_schema(
        "code",
        app=make_app(mode),
        key=KEY,
        contracts_dir=REPO_CONTRACTS,
        operation_ids=["getCodeUsage"],
    )
    # A hand-made case gets no config headers (schemathesis applies them when *generating* cases),
    # so the key is passed explicitly here.
    case = schema["/v1/code/usage"]["GET"].Case()
    headers = {"Authorization": f"Bearer {KEY}"}
    if mode == "ok":
        assert case.call_and_validate(headers=headers).status_code == 200
        return
    # schemathesis 4 raises a FailureGroup (a BaseExceptionGroup, not an AssertionError)
    with pytest.raises(BaseExceptionGroup, match="without authentication"):
        case.call_and_validate(headers=headers)


# `schemathesis.pytest.from_fixture` is broken on pytest 9 (it reads the removed `Node._nodeid`),
# so the schema is built at import time.
USAGE_SCHEMA = load_schema(
    "code",
    app=make_app("ok"),
    key=KEY,
    contracts_dir=REPO_CONTRACTS,
    operation_ids=["getCodeUsage"],
    max_examples=3,
)


@USAGE_SCHEMA.parametrize()
def test_parametrized_cases_carry_the_key(case: schemathesis.Case[Any]) -> None:
    response = case.call_and_validate()
    if case.meta is not None and case.meta.generation.mode.is_positive:
        assert response.status_code == 200


# --------------------------------------------------------------------------------------------------
# Stateful phase: runs when a contract has links, and finds bugs only a linked call reaches

ITEMS_CONTRACT = """\
openapi: 3.1.0
info: {title: items, version: "1"}
paths:
  /items:
    post:
      operationId: createItem
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              additionalProperties: false
              required: [name]
              properties:
                name: {type: string, minLength: 1, maxLength: 20}
      responses:
        "201":
          description: created
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Item"}
          links:
            GetItem:
              operationId: getItem
              parameters: {id: "$response.body#/id"}
        "400": {description: invalid}
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        "200":
          description: the item
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Item"}
        "404": {description: no such item}
components:
  schemas:
    Item:
      type: object
      required: [id, name]
      properties:
        id: {type: string}
        name: {type: string}
"""


class NewItem(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=20)]


def make_items_app(*, broken_read: bool) -> Litestar:
    items: dict[str, str] = {}

    @post("/items", status_code=201)
    async def create(data: JSONBody[NewItem]) -> dict[str, str]:
        item_id = uuid.uuid4().hex  # unguessable: only the link leads to an existing item
        items[item_id] = data.name
        return {"id": item_id, "name": data.name}

    @get("/items/{item_id:str}")
    async def read(item_id: FromPath[str]) -> dict[str, str]:
        if item_id not in items:
            raise NotFoundException()
        if broken_read:
            return {"id": item_id}  # "name" is missing
        return {"id": item_id, "name": items[item_id]}

    return Litestar([create, read])


def test_stateful_phase_follows_links(tmp_path: Path) -> None:
    contract = tmp_path / "items.yaml"
    contract.write_text(ITEMS_CONTRACT)
    report = check_contract(contract, app=make_items_app(broken_read=False), max_examples=FAST)
    assert report.phases["stateful"] == "ok"
    assert report.operations["GET /items/{id}"].statuses[200] > 0  # reached through the link

    # Stateful alone (schemathesis' other phases also reuse ids seen in responses, so they may
    # find it too).
    report = run_contract(
        contract, app=make_items_app(broken_read=True), max_examples=FAST, phases=["stateful"]
    )
    assert [(f.check, f.operation, f.phase) for f in report.failures] == [
        ("response_schema_conformance", "GET /items/{id}", "stateful")
    ]
    assert set(report.phases) == {"examples", "coverage", "fuzzing", "stateful"}
    assert report.phases["coverage"].startswith("skipped")


# --------------------------------------------------------------------------------------------------
# Contracts: location, naming, external references, lint

MINI_CONTRACT = """\
openapi: 3.1.0
info: {title: mini, version: "1"}
security:
  - apiKey: []
paths:
  /v1/code/usage:
    get:
      operationId: getCodeUsage
      responses:
        "200":
          description: usage
          headers:
            X-Request-ID: {$ref: "common.yaml#/components/headers/X-Request-ID"}
            X-RateLimit-Remaining: {$ref: "common.yaml#/components/headers/X-RateLimit-Remaining"}
            RateLimit: {$ref: "common.yaml#/components/headers/RateLimit"}
          content:
            application/json:
              schema:
                type: object
                required: [product, remaining]
                properties:
                  product: {type: string}
                  remaining: {type: integer}
        "401": {$ref: "common.yaml#/components/responses/Unauthorized"}
        "403": {$ref: "common.yaml#/components/responses/Forbidden"}
        "429": {$ref: "common.yaml#/components/responses/TooManyRequests"}
  /v1/code/types:
    get:
      operationId: listCodeTypes
      security: []
      responses:
        "200":
          description: types
          headers:
            X-Request-ID: {$ref: "common.yaml#/components/headers/X-Request-ID"}
          content:
            application/json:
              schema: {type: object, required: [data, total]}
components:
  securitySchemes:
    apiKey: {$ref: "common.yaml#/components/securitySchemes/apiKey"}
"""


@pytest.fixture
def mini_contracts(tmp_path: Path) -> Path:
    """A contracts dir holding a two-operation contract that references a sibling common.yaml."""
    directory = tmp_path / "contracts"
    directory.mkdir()
    shutil.copy(REPO_CONTRACTS / "common.yaml", directory / "common.yaml")
    (directory / "mini.yaml").write_text(MINI_CONTRACT)
    return directory


def served_document() -> dict[str, Any]:
    """MINI_CONTRACT as a gateway would serve it: self-contained, each operation naming its
    product - `GET /v1/code/usage` is product "mini", `GET /v1/code/types` product "catalog"."""
    raw = yaml.safe_load(MINI_CONTRACT)
    document: dict[str, Any] = Resolver(raw, REPO_CONTRACTS / "mini.yaml").inline(raw)
    for path, product in (("/v1/code/usage", "mini"), ("/v1/code/types", "catalog")):
        document["paths"][path]["get"]["x-product"] = product
    return document


def test_external_refs_resolve_from_a_sibling_file(mini_contracts: Path) -> None:
    report = check_contract(
        "mini", app=make_app("ok"), key=KEY, contracts_dir=mini_contracts, max_examples=FAST
    )
    assert report.product == "mini"
    assert set(report.operations) == {"GET /v1/code/usage", "GET /v1/code/types"}
    # The security scheme comes from common.yaml; ignored_auth only works if it resolved.
    assert not run_contract(
        "mini",
        app=make_app("ignore-auth"),
        key=KEY,
        contracts_dir=mini_contracts,
        max_examples=FAST,
    ).ok


def test_lint_flags_security_scheme_not_declared_locally(mini_contracts: Path) -> None:
    broken = mini_contracts / "broken.yaml"
    text = MINI_CONTRACT[: MINI_CONTRACT.index("components:")]
    broken.write_text(text)
    problems = lint_contract(broken)
    assert problems
    assert "apiKey" in problems[0]
    report = run_contract(broken, app=make_app("ok"), key=KEY)
    assert not report.ok
    assert report.errors == problems
    assert not lint_contract(REPO_CONTRACTS / "code.yaml")
    assert not lint_contract(REPO_CONTRACTS / "common.yaml")


def test_contract_naming(mini_contracts: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert list_products(mini_contracts) == ["mini"]
    assert resolve_contract("mini", mini_contracts) == mini_contracts / "mini.yaml"
    assert resolve_contract(str(mini_contracts / "mini.yaml")) == mini_contracts / "mini.yaml"
    with pytest.raises(ContractError):
        resolve_contract("nope", mini_contracts)
    monkeypatch.setenv("TOLLWAY_CONTRACTS", str(mini_contracts))
    assert find_contracts_dir() == mini_contracts
    monkeypatch.delenv("TOLLWAY_CONTRACTS")
    monkeypatch.chdir(mini_contracts)  # no ./contracts here: falls back to the repository's
    assert find_contracts_dir() == REPO_CONTRACTS
    assert "code" in list_products()


def test_target_must_be_app_or_url() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        run_contract("code", contracts_dir=REPO_CONTRACTS)
    with pytest.raises(ValueError, match="exactly one"):
        run_contract("code", app=make_app(), url="http://127.0.0.1:1", contracts_dir=REPO_CONTRACTS)


# --------------------------------------------------------------------------------------------------
# Live servers in another process: the CLI and the pytest entry point over real HTTP

SERVER_SCRIPT = textwrap.dedent(
    """
    import importlib.util, sys
    import uvicorn
    spec = importlib.util.spec_from_file_location("harness_test_servers", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    uvicorn.run(module.make_app(sys.argv[2]), host="127.0.0.1", port=int(sys.argv[3]),
                log_level="warning", lifespan="off")
    """
)


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen[bytes]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _start_server(mode: Mode) -> LiveServer:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER_SCRIPT, __file__, mode, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stderr = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"test server exited early:\n{stderr}")
        try:
            httpx.get(f"{url}/v1/code/types", timeout=1.0)
            return LiveServer(url=url, process=process)
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("test server did not start in 20 s")


def _stop_server(server: LiveServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@pytest.fixture(scope="module")
def good_server() -> Iterator[LiveServer]:
    server = _start_server("ok")
    yield server
    _stop_server(server)


@pytest.fixture(scope="module")
def bad_server() -> Iterator[LiveServer]:
    server = _start_server("ignore-auth")
    yield server
    _stop_server(server)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    executable = Path(sys.executable).with_name("tollway-harness")
    command = (
        [str(executable)] if executable.exists() else [sys.executable, "-m", "tollway_harness"]
    )
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={**os.environ, "TOLLWAY_CONTRACTS": ""},
    )


def test_cli_passes_a_correct_live_server(
    good_server: LiveServer, mini_contracts: Path, tmp_path: Path
) -> None:
    junit = tmp_path / "junit.xml"
    result = _cli(
        "run",
        "--url",
        good_server.url,
        "--key",
        KEY,
        "--contracts",
        str(mini_contracts),
        "--max-examples",
        str(FAST),
        "--junit-xml",
        str(junit),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "mini: PASS" in result.stdout
    assert "1 passed, 0 failed" in result.stdout
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("name") == "mini"
    assert suite.get("failures") == "0"
    assert len(suite.findall("testcase")) == 2


def test_cli_fails_a_wrong_live_server(
    bad_server: LiveServer, mini_contracts: Path, tmp_path: Path
) -> None:
    junit = tmp_path / "junit.xml"
    result = _cli(
        "run",
        "--url",
        bad_server.url,
        "--key",
        KEY,
        "--product",
        "mini",
        "--contracts",
        str(mini_contracts),
        "--max-examples",
        str(FAST),
        "--junit-xml",
        str(junit),
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "mini: FAIL" in result.stdout
    assert "ignored_auth" in result.stdout
    assert KEY not in result.stdout
    failures = ET.parse(junit).getroot().findall(".//failure")
    assert failures
    assert "ignored_auth" in (failures[0].get("message") or "")


def test_cli_usage_errors(tmp_path: Path) -> None:
    result = _cli(
        "run", "--url", "http://127.0.0.1:1", "--contracts", str(tmp_path / "nope"), cwd=tmp_path
    )
    assert result.returncode == 2
    assert "contracts directory not found" in result.stderr
    listing = _cli("list", "--contracts", str(REPO_CONTRACTS), cwd=tmp_path)
    assert listing.returncode == 0
    assert "code" in listing.stdout.split()
    assert "common" not in listing.stdout.split()


def test_pytest_entry_point_against_live_servers(
    good_server: LiveServer, bad_server: LiveServer, mini_contracts: Path, tmp_path: Path
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")

    def run(url: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--pyargs",
                "tollway_harness.live",
                "--tollway-url",
                url,
                "--tollway-key",
                KEY,
                "--tollway-contracts",
                str(mini_contracts),
                "--tollway-max-examples",
                str(FAST),
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )

    good = run(good_server.url)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "1 passed" in good.stdout
    bad = run(bad_server.url)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "ignored_auth" in bad.stdout


def test_cli_runs_the_document_a_live_server_serves(
    good_server: LiveServer, bad_server: LiveServer, tmp_path: Path
) -> None:
    """`--schema-url auto` tests `<url>/schema/openapi.json`, each product on its own; no
    contracts directory is needed."""
    listing = _cli("list", "--schema-url", f"{good_server.url}/schema/openapi.json", cwd=tmp_path)
    assert listing.stdout.split() == ["catalog", "mini"]
    args = ("--key", KEY, "--schema-url", "auto", "--max-examples", str(FAST))
    good = _cli("run", "--url", good_server.url, *args, cwd=tmp_path)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "catalog: PASS - 1 operations" in good.stdout
    assert "mini: PASS - 1 operations" in good.stdout
    bad = _cli("run", "--url", bad_server.url, *args, "--product", "mini", cwd=tmp_path)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "ignored_auth" in bad.stdout
    unknown = _cli("run", "--url", good_server.url, *args, "--product", "nope", cwd=tmp_path)
    assert unknown.returncode == 2
    assert "no operations of product 'nope'; it has: catalog, mini" in unknown.stderr
