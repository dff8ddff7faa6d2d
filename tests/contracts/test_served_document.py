"""The document a gateway serves at /schema is its products' contracts, shipped in their
packages and merged; the pages showing it load nothing from elsewhere."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from contract_runs import CONTRACTS, repository_contract
from litestar import Litestar, get
from litestar.params import FromQuery

from tollway import (
    Gateway,
    Plan,
    Product,
    RegistrationError,
    RouteRegistrar,
    hookimpl,
    load_settings,
)
from tollway.app import create_app
from tollway.openapi import common_file, contract_file, served_document
from tollway.openapi.document import DocumentBuilder
from tollway_harness import Resolver

pytestmark = pytest.mark.contract

ROOT = Path(__file__).resolve().parents[2]
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _gateway(*extra: tuple[str, object], plugins: list[str] | None = None) -> Gateway:
    return Gateway(load_settings(environ={}, plugins=plugins), extra_plugins=extra)


@pytest.fixture(scope="module")
def gateway() -> Gateway:
    """Every installed product; never started."""
    return _gateway()


@pytest.fixture(scope="module")
def app(gateway: Gateway) -> Litestar:
    return create_app(gateway)


@pytest.fixture(scope="module")
def document(app: Litestar) -> dict[str, Any]:
    return served_document(app)


def _client(app: Litestar) -> httpx.AsyncClient:
    # The pages and the document need neither the database nor the lifespan.
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway")


def test_each_plugin_ships_its_contract_and_the_core_ships_common_yaml(gateway: Gateway) -> None:
    shipped = {"common.yaml"}
    assert common_file().read_bytes() == repository_contract("common.yaml").read_bytes()
    for product in gateway.registry.products.values():
        assert product.contract is not None, f"product {product.name} declares no contract"
        packaged = contract_file(gateway, product).read_bytes()
        assert packaged == repository_contract(product.contract).read_bytes(), product.name
        shipped.add(product.contract)
    assert {path.name for path in CONTRACTS.glob("*.yaml")} == shipped


@pytest.mark.slow
def test_a_built_wheel_holds_the_contract_itself(tmp_path: Path) -> None:
    # A copy of the project with its symbolic link resolved, so that building leaves the
    # working tree alone; what is checked is the package data the wheel takes in.
    project = tmp_path / "code"
    shutil.copytree(
        ROOT / "plugins" / "code",
        project,
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"),
    )
    built = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check"),
            *("--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp_path), str(project)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("tollway_code-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        packaged = archive.read("tollway_code/contracts/code.yaml")
    assert packaged == repository_contract("code.yaml").read_bytes()


def test_the_served_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"] == "3.1.0"
    schemathesis.openapi.from_dict(document).validate()
    Resolver(document).inline(document)  # every $ref resolves inside the document
    for path in CONTRACTS.glob("*.yaml"):
        schemathesis.openapi.from_path(path).validate()


def _operations(item: dict[str, Any]) -> dict[str, Any]:
    return {method: item[method] for method in HTTP_METHODS if method in item}


def test_the_served_document_is_the_merged_contracts(
    gateway: Gateway, document: dict[str, Any]
) -> None:
    """Every operation served is its contract's, word for word once references are
    resolved, with the product's tag, ``x-product`` and its security made explicit."""
    served = Resolver(document)
    contracted: set[str] = set()
    for product in gateway.registry.products.values():
        assert product.contract is not None
        resolver = Resolver.for_file(repository_contract(product.contract))
        contract = resolver.document
        for path, raw_item in contract["paths"].items():
            contracted.add(path)
            item = resolver.inline(raw_item)
            served_item = served.inline(document["paths"][path])
            for method, operation in _operations(item).items():
                expected = {
                    **operation,
                    "tags": [product.title],
                    "x-product": product.name,
                    "security": operation.get("security", contract.get("security", [])),
                }
                actual = {"security": [], **served_item.pop(method)}
                assert actual == expected, f"{method.upper()} {path}"
            assert served_item == {
                key: value for key, value in item.items() if key not in HTTP_METHODS
            }
    assert set(document["paths"]) == contracted
    assert [tag["x-product"] for tag in document["tags"]] == sorted(gateway.registry.products)


def test_products_keep_their_component_names_apart(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    # Both the code and the public QR contract name a schema QrEcc, described differently.
    assert schemas["code.QrEcc"]["enum"] == schemas["qr.QrEcc"]["enum"]
    assert schemas["code.QrEcc"]["description"] != schemas["qr.QrEcc"]["description"]
    assert "Error" in schemas  # common.yaml's keep their names
    # Contracts re-declare the shared scheme; the document has the gateway's one.
    assert list(document["components"]["securitySchemes"]) == ["apiKey"]


async def test_the_pages_load_only_assets_the_gateway_serves(app: Litestar) -> None:
    async with _client(app) as client:
        for page in ("/schema", "/schema/swagger", "/schema/redoc"):
            response = await client.get(page)
            assert response.status_code == 200, page
            assert response.headers["content-type"].startswith("text/html")
            head = response.text.split("<body", 1)[0]
            urls = re.findall(r"""(?:src|href)=["']([^"']+)["']""", head)
            assert urls, page
            for url in urls:
                assert url.startswith("/"), f"{page} loads {url}"
                assert not url.startswith("//"), f"{page} loads {url}"
                asset = await client.get(url)
                assert asset.status_code == 200, url
                assert asset.content, url
            assert '"openapi":"3.1.0"' in response.text  # the served document, embedded
        for name in ("openapi.json", "openapi.yaml"):
            assert (await client.get(f"/schema/{name}")).status_code == 200
        assert (await client.get("/schema/static/index.html")).status_code == 404


async def test_the_json_document_is_the_one_tollway_openapi_prints(
    app: Litestar, document: dict[str, Any]
) -> None:
    async with _client(app) as client:
        assert (await client.get("/schema/openapi.json")).json() == document


# ------------------------------------------------------------------------------------------
# Products without a contract, and contracts that cannot be merged


@get("/hello", public=True)
async def hello(name: FromQuery[str] = "world") -> dict[str, str]:
    return {"hello": name}


class GreeterPlugin:
    """Product ``greeter``, whose contract is ``contract`` (None: it has none)."""

    def __init__(self, contract: str | None) -> None:
        self.contract = contract

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(Product("greeter", "/v1/greeter", title="Greeter", contract=self.contract))

    @hookimpl
    def tollway_register_plans(self, register: Callable[[str, Plan], None]) -> None:
        register("greeter", Plan("free", requests_per_day=10))

    @hookimpl
    def tollway_register_routes(self, register: RouteRegistrar) -> None:
        register("greeter", [hello])


def test_a_product_without_a_contract_is_documented_from_its_handlers() -> None:
    app = create_app(_gateway(("greeter", GreeterPlugin(None)), plugins=["code"]))
    document = served_document(app)
    operation = document["paths"]["/v1/greeter/hello"]["get"]
    assert operation["x-product"] == "greeter"
    assert operation["tags"] == ["Greeter"]
    assert [parameter["name"] for parameter in operation["parameters"]] == ["name"]
    assert "/v1/code/qr" in document["paths"]
    schemathesis.openapi.from_dict(document).validate()


def test_a_contract_that_is_not_installed_stops_start_up() -> None:
    gateway = _gateway(("greeter", GreeterPlugin("greeter.yaml")), plugins=[])
    with pytest.raises(RegistrationError, match=r"'greeter\.yaml', which is not installed"):
        create_app(gateway)


def test_two_contracts_serving_one_path_or_operation_id_stop_start_up() -> None:
    common = {"components": {"schemas": {"Error": {"type": "object"}}}}
    contract = {"paths": {"/v1/a/x": {"get": {"operationId": "getX", "responses": {}}}}}
    builder = DocumentBuilder(common)
    builder.add_contract(Product("a", "/v1/a"), contract, "a.yaml")
    with pytest.raises(RegistrationError, match="path /v1/a/x is already served"):
        builder.add_contract(Product("b", "/v1/b"), contract, "b.yaml")
    renamed = {"paths": {"/v1/b/x": contract["paths"]["/v1/a/x"]}}
    with pytest.raises(RegistrationError, match=r"operationId 'getX' is used by a\.yaml"):
        builder.add_contract(Product("b", "/v1/b"), renamed, "b.yaml")
    unknown = {"paths": {"/v1/c": {"get": {"responses": {"200": {"$ref": "x.yaml#/y"}}}}}}
    with pytest.raises(RegistrationError, match="unsupported"):
        builder.add_contract(Product("c", "/v1/c"), unknown, "c.yaml")
