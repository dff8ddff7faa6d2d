"""The served OpenAPI document: the installed products' contracts merged into one.

Merging keeps every operation as its contract has it, and only moves names so that one
document holds them all:

- ``common.yaml``'s components keep their names (``#/components/responses/Unauthorized``,
  the gateway's ``apiKey`` security scheme); ``common.yaml#/...`` references point there;
- a product's own components are renamed ``<product>.<name>`` (``code.QrRequest``), since
  products reuse names such as ``QrSize`` or ``NotFound``; a component that is only a
  reference to a ``common.yaml`` component is replaced by it;
- each operation gets the security its contract's top level gives it, one tag per product
  in place of the contract's own (the product's title, described by the contract's
  ``info.description``) and ``x-product``, the product's name, which
  ``tollway-harness --schema-url`` selects operations by.

Two products serving one path, or one ``operationId``, stop start-up. A product without
a contract is documented from its handlers (Litestar's generated schema), its components
renamed alike.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tollway.registry import Product, RegistrationError, Registry

OPENAPI_VERSION = "3.1.0"
COMMON = "common.yaml"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
PRODUCT_EXTENSION = "x-product"

_COMPONENT_REF = re.compile(
    r"^(?P<file>[^#]*)#/components/(?P<kind>[^/]+)/(?P<name>[^/]+)(?P<rest>/.*)?$"
)


@dataclass
class _Names:
    """How one source's component names and ``$ref``s read in the merged document."""

    source: str
    """What is being merged, for error messages (``tollway_code/contracts/code.yaml``)."""
    prefix: str
    common: Mapping[str, Mapping[str, Any]]
    aliases: dict[tuple[str, str], str] = field(default_factory=dict)

    def name(self, kind: str, name: str) -> str:
        return self.aliases.get((kind, name), f"{self.prefix}.{name}")

    def ref(self, ref: str) -> str:
        match = _COMPONENT_REF.match(ref)
        if match is None:
            if ref.startswith("#/paths/"):
                return ref
            raise RegistrationError(f"{self.source}: unsupported $ref {ref!r}")
        kind, name, rest = match["kind"], match["name"], match["rest"] or ""
        if match["file"] == "":
            return f"#/components/{kind}/{self.name(kind, name)}{rest}"
        if match["file"] != COMMON or name not in self.common.get(kind, {}):
            raise RegistrationError(f"{self.source}: $ref {ref!r} names nothing in {COMMON}")
        return f"#/components/{kind}/{name}{rest}"

    def rewrite(self, node: Any) -> Any:
        """A copy of ``node`` with every ``$ref`` in merged-document terms."""
        if isinstance(node, Mapping):
            return {
                key: self.ref(value)
                if key == "$ref" and isinstance(value, str)
                else self.rewrite(value)
                for key, value in node.items()
            }
        if isinstance(node, list):
            return [self.rewrite(value) for value in node]
        return node

    def security(self, requirements: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [
            {self.name("securitySchemes", scheme): list(scopes) for scheme, scopes in item.items()}
            for item in requirements
        ]


def _is_alias(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and set(value) == {"$ref"}
        and str(value["$ref"]).startswith(f"{COMMON}#")
    )


@dataclass
class DocumentBuilder:
    """Builds the served document one product at a time (:meth:`add_contract`,
    :meth:`add_generated`); :attr:`document` is the result."""

    common: Mapping[str, Any]
    document: dict[str, Any] = field(init=False)
    _operation_ids: dict[str, str] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.document = {
            "openapi": OPENAPI_VERSION,
            "info": {},
            "servers": [{"url": "/"}],
            "tags": [],
            "paths": {},
            "components": copy.deepcopy(dict(self.common.get("components") or {})),
        }

    def _tag(self, product: Product, description: str) -> str:
        """Add ``product``'s tag: its title, unless another product's tag has it."""
        name = product.title or product.name
        if any(tag["name"] == name for tag in self.document["tags"]):
            name = f"{name} ({product.name})"
        self.document["tags"].append(
            {"name": name, "description": description.strip(), PRODUCT_EXTENSION: product.name}
        )
        return name

    def _components(self, names: _Names, components: Mapping[str, Mapping[str, Any]]) -> None:
        for kind, items in components.items():
            for name, value in items.items():
                if _is_alias(value):
                    continue
                merged = self.document["components"].setdefault(kind, {})
                merged[names.name(kind, name)] = names.rewrite(value)

    def _paths(
        self,
        names: _Names,
        paths: Mapping[str, Any],
        operation: Callable[[Mapping[str, Any]], dict[str, Any]],
    ) -> None:
        for path, item in paths.items():
            if path in self.document["paths"]:
                raise RegistrationError(
                    f"{names.source}: path {path} is already served by another product"
                )
            merged = names.rewrite(item)
            for method in HTTP_METHODS:
                if method in merged:
                    merged[method] = operation(merged[method])
                    self._claim_operation_id(merged[method], names.source)
            self.document["paths"][path] = merged

    def _claim_operation_id(self, operation: Mapping[str, Any], source: str) -> None:
        operation_id = operation.get("operationId")
        if operation_id is None:
            return
        if operation_id in self._operation_ids:
            owner = self._operation_ids[operation_id]
            raise RegistrationError(f"{source}: operationId {operation_id!r} is used by {owner}")
        self._operation_ids[operation_id] = source

    def add_contract(self, product: Product, contract: Mapping[str, Any], source: str) -> None:
        """Merge ``product``'s ``contract`` (read from ``source``)."""
        components = contract.get("components") or {}
        names = _Names(source, product.name, self.common.get("components") or {})
        for kind, items in components.items():
            for name, value in items.items():
                if _is_alias(value):
                    names.aliases[(kind, name)] = names.ref(value["$ref"]).rsplit("/", 1)[1]
        tag = self._tag(product, (contract.get("info") or {}).get("description", ""))
        default_security = contract.get("security") or []

        def operation(raw: Mapping[str, Any]) -> dict[str, Any]:
            # The document has no top-level security: an operation without any is public.
            security = names.security(raw.get("security", default_security))
            merged = {key: value for key, value in raw.items() if key != "security"}
            return {**merged, "tags": [tag], PRODUCT_EXTENSION: product.name} | (
                {"security": security} if security else {}
            )

        self._components(names, components)
        self._paths(names, contract.get("paths") or {}, operation)

    def add_generated(
        self, product: Product, generated: Mapping[str, Any], registry: Registry
    ) -> None:
        """Merge the operations of ``product`` that Litestar generated from its handlers,
        with the component schemas they use."""
        paths = {
            path: item
            for path, item in (generated.get("paths") or {}).items()
            if registry.product_for_path(path) == product
        }
        names = _Names(f"the handlers of product {product.name!r}", product.name, {})
        schemas = (generated.get("components") or {}).get("schemas") or {}
        used = _referenced_schemas(paths, schemas)
        tag = self._tag(
            product, f"Documented from its handlers: product {product.name!r} ships no contract."
        )

        def operation(raw: Mapping[str, Any]) -> dict[str, Any]:
            return {**raw, "tags": [tag], PRODUCT_EXTENSION: product.name}

        self._components(names, {"schemas": {name: schemas[name] for name in sorted(used)}})
        self._paths(names, paths, operation)


def _referenced_schemas(node: Any, schemas: Mapping[str, Any]) -> set[str]:
    """Names of the component schemas ``node`` refers to, directly or through others."""
    found: set[str] = set()
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, Mapping):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                name = ref.removeprefix("#/components/schemas/").split("/", 1)[0]
                if name not in found:
                    found.add(name)
                    pending.append(schemas.get(name))
            pending.extend(value for key, value in item.items() if key != "$ref")
        elif isinstance(item, list):
            pending.extend(item)
    return found
