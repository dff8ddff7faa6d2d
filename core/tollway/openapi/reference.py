"""The API reference a gateway serves under ``/schema``: its OpenAPI document (JSON and
YAML) and two pages rendering it, Swagger UI (``/schema``, ``/schema/swagger``) and Redoc
(``/schema/redoc``), whose scripts and styles come from the ``openapi-ui-bundles`` package
and are served by the gateway itself, so the pages work without internet access.

Litestar generates an OpenAPI document from the handlers; the gateway keeps it (it is
``app.openapi_schema``, which the drift test compares with the contracts) but serves the
contracts instead, through render plugins that are handed the served document.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from litestar import Litestar, Request, Response, Router, get
from litestar.datastructures import CacheControlHeader
from litestar.exceptions import NotFoundException
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import (
    JsonRenderPlugin,
    OpenAPIRenderPlugin,
    RedocRenderPlugin,
    SwaggerRenderPlugin,
    YamlRenderPlugin,
)
from litestar.params import FromPath
from litestar.response import File
from openapi_ui_bundles import redoc, swagger_ui

from tollway.gateway import Gateway
from tollway.openapi.contracts import common_file, contract_file, read_contract
from tollway.openapi.document import DocumentBuilder
from tollway.registry import Product

SCHEMA_PATH = "/schema"
ASSETS_PATH = f"{SCHEMA_PATH}/static"

ASSETS: dict[str, Path] = {
    name: folder / name
    for folder, names in (
        (
            swagger_ui.static_path,
            (
                "swagger-ui-bundle.js",
                "swagger-ui-standalone-preset.js",
                "swagger-ui.css",
                "favicon-32x32.png",
            ),
        ),
        (redoc.static_path, ("redoc.standalone.js", "logo-mini.svg")),
    )
    for name in names
}
"""The files the pages load, by the name they are served under ``/schema/static/``."""

REWRITTEN: dict[str, tuple[bytes, bytes]] = {
    # Redoc's sidebar shows its logo from its CDN; the bundle ships the same file.
    "redoc.standalone.js": (
        b"https://cdn.redoc.ly/redoc/logo-mini.svg",
        f"{ASSETS_PATH}/logo-mini.svg".encode(),
    ),
}
"""Assets served with one address replaced, so that the pages load nothing from
elsewhere (the browser test holds this)."""

FAVICON = f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/favicon-32x32.png'>"


def _source(resource: Traversable) -> str:
    """``tollway_code/contracts/code.yaml`` for messages: the package-relative path."""
    parts = Path(str(resource)).parts
    return "/".join(parts[-3:])


def _info(products: list[Product]) -> dict[str, Any]:
    try:
        gateway_version = version("tollway")
    except PackageNotFoundError:  # pragma: no cover - tollway is always installed
        gateway_version = "0"
    rows = "\n".join(f"| {p.title or p.name} | `{p.prefix}` |" for p in products)
    return {
        "title": "tollway",
        "version": gateway_version,
        "description": (
            "Every product this gateway serves, merged from the contracts its plugins ship.\n"
            "Keyed operations need `Authorization: Bearer <API key>`.\n\n"
            f"| Product | Path prefix |\n|---|---|\n{rows}\n"
        ),
    }


class ApiReference:
    """The served OpenAPI document of one gateway and the pages showing it.

    The contracts are read and merged when it is made, so a missing contract or two
    products claiming one path or ``operationId`` stop start-up; products without a
    contract are added from Litestar's generated document the first time it is asked for.
    """

    def __init__(self, gateway: Gateway) -> None:
        products = sorted(gateway.registry.products.values(), key=lambda product: product.name)
        self._registry = gateway.registry
        self._builder = DocumentBuilder(read_contract(common_file()))
        info = self._builder.document["info"] = _info(products)
        self.version: str = info["version"]
        for product in products:
            if product.contract is not None:
                resource = contract_file(gateway, product)
                self._builder.add_contract(product, read_contract(resource), _source(resource))
        self._undocumented = [product for product in products if product.contract is None]
        self._document: dict[str, Any] | None = None

    def document(self, generated: Callable[[], Mapping[str, Any]]) -> dict[str, Any]:
        """The served document; ``generated`` gives Litestar's, needed only (and called
        only once) when some product has no contract."""
        if self._document is None:
            if self._undocumented:
                litestar_document = generated()
                for product in self._undocumented:
                    self._builder.add_generated(product, litestar_document, self._registry)
            self._document = self._builder.document
        return self._document

    def openapi_config(self) -> OpenAPIConfig:
        """Litestar's OpenAPI configuration serving this document and its pages."""
        swagger = SwaggerRenderPlugin(
            js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            css_url=f"{ASSETS_PATH}/swagger-ui.css",
            standalone_preset_js_url=f"{ASSETS_PATH}/swagger-ui-standalone-preset.js",
            path="/swagger",
            favicon=FAVICON,
        )
        redoc_page = RedocRenderPlugin(
            js_url=f"{ASSETS_PATH}/redoc.standalone.js",
            google_fonts=False,
            path="/redoc",
            favicon=FAVICON,
        )
        pages = [swagger, redoc_page, JsonRenderPlugin(), YamlRenderPlugin()]
        return OpenAPIConfig(
            title="tollway",
            version=self.version,
            path=SCHEMA_PATH,
            render_plugins=[_ServedPage(page, self) for page in pages],
            openapi_router=Router(SCHEMA_PATH, route_handlers=[_asset], include_in_schema=False),
        )


@get(
    "/static/{name:str}",
    include_in_schema=False,
    sync_to_thread=False,
    cache_control=CacheControlHeader(public=True, max_age=86400),
)
def _asset(name: FromPath[str]) -> File | Response[bytes]:
    path = ASSETS.get(name)
    if path is None:
        raise NotFoundException(f"No asset {name!r}")
    if name in REWRITTEN:
        return Response(_rewritten(name), media_type="text/javascript")
    return File(path, filename=name, content_disposition_type="inline")


@functools.cache
def _rewritten(name: str) -> bytes:
    old, new = REWRITTEN[name]
    content = ASSETS[name].read_bytes()
    if old not in content:
        raise RuntimeError(f"{name} no longer holds {old!r}: check the bundle's new version")
    return content.replace(old, new)


class _ServedPage(OpenAPIRenderPlugin):
    """A Litestar render plugin (``page``) shown the served document rather than the
    generated one; the rendering is made once."""

    def __init__(self, page: OpenAPIRenderPlugin, reference: ApiReference) -> None:
        super().__init__(
            path=page.paths, media_type=page.media_type, favicon=page.favicon, style=page.style
        )
        self.page = page
        self.reference = reference
        self._rendered: bytes | None = None

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        if self._rendered is None:
            document = self.reference.document(lambda: openapi_schema)
            self._rendered = self.page.render(request, document)
        return self._rendered

    def receive_router(self, router: Router) -> None:
        self.page.receive_router(router)


def served_document(app: Litestar) -> dict[str, Any]:
    """The OpenAPI document ``app`` serves at ``/schema/openapi.json``."""
    for plugin in app.openapi_config.render_plugins if app.openapi_config else ():
        if isinstance(plugin, _ServedPage):
            return plugin.reference.document(app.openapi_schema.to_schema)
    raise LookupError("this app does not serve a tollway API reference")
