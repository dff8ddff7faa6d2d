"""Drift between what a build's code accepts and what its contract says, operation by operation.

`compare_documents(code, contract)` takes two OpenAPI documents: the one a framework generates from
the handlers (Litestar's `app.openapi_schema.to_schema()`), and the contract (a gateway's served
document, or a contract file with its `$ref`s resolvable by `Resolver`). It returns one line per
difference, empty when they agree.

Compared, for every (method, path):

- the set of operations, and whether each needs an API key (`security`);
- parameters: the same query, path and cookie parameters; every header parameter the code declares
  is documented (a handler may read a header such as `If-None-Match` itself, which no generator
  sees); per parameter `required` and the schema facets below;
- the request body: whether it is required, its media types and its schema - types, `enum`,
  properties, `required`, items, bounds (`minimum`, `maxLength`, `maxItems`, ...), `pattern`, and
  `default` when both give one;
- the code's success status (2xx) is documented, with the code's media types among the contract's
  (except for HEAD, which has no body); for JSON, the response schema's types, `enum`s, properties
  and items.

The contract is authoritative for what generated schemas cannot express, so these are not compared:
error responses (the generator knows only its framework's generic 400), formats, descriptions,
examples, `additionalProperties` (msgspec's `forbid_unknown_fields` is not in Litestar's schemas),
and in responses bounds, patterns and `required` (a field with a default is optional to the
generator yet always sent), nor `null` in the code's type of a response property it does not
require (such a field may be omitted rather than sent as null).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tollway_harness.contracts import HTTP_METHODS, ContractError, load_raw

BOUNDS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
)
"""Schema keywords that bound a value; compared in what a request may carry."""

JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
LOCATIONS_GENERATORS_SEE = frozenset({"query", "path", "cookie"})


# --------------------------------------------------------------------------------------------------
# $ref resolution


@functools.lru_cache(maxsize=64)
def _read(path: Path, modified: int) -> dict[str, Any]:
    """A contract file, read once while it is unchanged (`modified`: its mtime); callers do
    not change what they get."""
    return load_raw(path)


def _pointer(document: Any, pointer: str) -> Any:
    node = document
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise ContractError(f"$ref pointer #{pointer} does not resolve") from None
    return node


@dataclass(frozen=True, slots=True)
class Resolver:
    """Follows `$ref`s within `document`, and into sibling files when `location` (the document's
    own path) is given. Siblings of a `$ref` (OpenAPI 3.1) are laid over its target."""

    document: Mapping[str, Any]
    location: Path | None = None

    @classmethod
    def for_file(cls, path: str | os.PathLike[str]) -> Resolver:
        path = Path(path).resolve()
        return cls(_read(path, path.stat().st_mtime_ns if path.exists() else 0), path)

    def _target(self, ref: str) -> tuple[Any, Resolver]:
        file, _, pointer = ref.partition("#")
        if not file:
            return _pointer(self.document, pointer), self
        if self.location is None:
            raise ContractError(f"$ref {ref!r} leaves the document, which has no location")
        other = Resolver.for_file(self.location.parent / file)
        return _pointer(other.document, pointer), other

    def follow(self, node: Any) -> tuple[Any, Resolver]:
        """`node` with its `$ref`s followed until a node without one, and the resolver that
        resolves the references inside what is returned."""
        resolver = self
        seen: set[str] = set()
        while isinstance(node, Mapping) and "$ref" in node:
            ref = str(node["$ref"])
            if ref in seen:
                raise ContractError(f"$ref {ref!r} refers to itself")
            seen.add(ref)
            target, resolver = resolver._target(ref)
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            node = {**target, **siblings} if siblings and isinstance(target, Mapping) else target
        return node, resolver

    def inline(self, node: Any, _depth: int = 0) -> Any:
        """`node` with every `$ref` replaced by what it refers to (recursive schemas fail)."""
        if _depth > 64:
            raise ContractError("$refs nest more than 64 deep: a recursive schema?")
        node, resolver = self.follow(node)
        if isinstance(node, Mapping):
            return {key: resolver.inline(value, _depth + 1) for key, value in node.items()}
        if isinstance(node, list):
            return [resolver.inline(value, _depth + 1) for value in node]
        return node


# --------------------------------------------------------------------------------------------------
# Schemas in a canonical form


@dataclass(frozen=True, slots=True)
class _Rules:
    bounds: bool
    """Compare `BOUNDS` and `default` (requests), or not (responses)."""
    required: bool
    """Compare `required` (requests), or not (responses)."""
    parameter: bool = False
    """A parameter's schema: `null` means "absent", which `required` already says."""


REQUEST = _Rules(bounds=True, required=True)
PARAMETER = _Rules(bounds=True, required=True, parameter=True)
RESPONSE = _Rules(bounds=False, required=False)


def _types(schema: Mapping[str, Any]) -> set[str]:
    declared = schema.get("type")
    types = {declared} if isinstance(declared, str) else set(declared or ())
    if "properties" in schema:
        types.add("object")
    return types & JSON_TYPES


def _merge(into: dict[str, Any], member: Mapping[str, Any]) -> None:
    """Lay a union member's canonical shape over `into`, the union's: types and enum values add
    up, an object member becomes an alternative, other keywords keep their first value."""
    for key in ("type", "enum"):
        if key in member:
            into[key] = sorted(set(into.get(key, [])) | set(member[key]))
    if "properties" in member:
        into.setdefault("alternatives", []).append(
            {key: value for key, value in member.items() if key not in ("type", "enum")}
        )
        return
    for key, value in member.items():
        into.setdefault(key, value)


def _all_of(schema: Mapping[str, Any], resolver: Resolver) -> dict[str, Any]:
    """An `allOf` as the one schema it amounts to: members laid over each other, their
    properties and `required` lists joined."""
    merged = {key: value for key, value in schema.items() if key != "allOf"}
    for raw in schema["allOf"]:
        member, _ = resolver.follow(raw)
        properties = {**merged.get("properties", {}), **member.get("properties", {})}
        required = [*merged.get("required", []), *member.get("required", [])]
        merged.update(member)
        if properties:
            merged["properties"] = properties
        if required:
            merged["required"] = sorted(set(required))
    return merged


def _canonical(schema: Any, resolver: Resolver, rules: _Rules, seen: frozenset[str]) -> Any:
    """A comparable form of a JSON Schema: sorted `type` and `enum` lists (enum values as JSON,
    `null` left to `type`), properties, items, and the facets `rules` compare; unions flattened."""
    if isinstance(schema, Mapping) and "$ref" in schema:
        ref = str(schema["$ref"])
        if ref in seen:
            return {"recursive": ref.rsplit("/", 1)[-1]}
        seen = seen | {ref}
    schema, resolver = resolver.follow(schema)
    if not isinstance(schema, Mapping):
        return {}
    if schema.get("allOf"):
        schema = _all_of(schema, resolver)
    if schema.get("oneOf") or schema.get("anyOf"):
        return _union(schema, resolver, rules, seen)
    shape: dict[str, Any] = {}
    types = _types(schema)
    values = list(schema.get("enum", [])) + ([schema["const"]] if "const" in schema else [])
    if None in values:
        types.add("null")
    if types:
        shape["type"] = sorted(types - ({"null"} if rules.parameter else set()))
    if values:
        shape["enum"] = sorted(json.dumps(value) for value in values if value is not None)
    if rules.bounds:
        shape.update({key: schema[key] for key in (*BOUNDS, "default") if key in schema})
    if "items" in schema:
        shape["items"] = _canonical(schema["items"], resolver, rules, seen)
    if "properties" in schema:
        shape.update(_object(schema, resolver, rules, seen))
    return shape


def _object(
    schema: Mapping[str, Any], resolver: Resolver, rules: _Rules, seen: frozenset[str]
) -> dict[str, Any]:
    required = set(schema.get("required", []))
    properties = {
        name: _canonical(value, resolver, rules, seen)
        for name, value in (schema.get("properties") or {}).items()
    }
    shape: dict[str, Any] = {"properties": properties}
    if rules.required:
        shape["required"] = sorted(required)
    else:
        for name, value in properties.items():
            if name not in required and isinstance(value, dict) and "type" in value:
                value["optional"] = True
    return shape


def _joined(common: Mapping[str, Any], member: Any) -> dict[str, Any]:
    """A union member with the keywords beside the union: both apply, so `required` lists
    and `properties` add up."""
    if not isinstance(member, Mapping):
        return dict(common)
    joined = {**common, **member}
    if "required" in common and "required" in member:
        joined["required"] = sorted({*common["required"], *member["required"]})
    if "properties" in common and "properties" in member:
        joined["properties"] = {**common["properties"], **member["properties"]}
    return joined


def _union(
    schema: Mapping[str, Any], resolver: Resolver, rules: _Rules, seen: frozenset[str]
) -> dict[str, Any]:
    """`oneOf`/`anyOf` as one shape: scalar members merged (`type: [integer, "null"]`), the
    keywords beside them applying to each; several object members kept as alternatives."""
    common = {key: value for key, value in schema.items() if key not in ("oneOf", "anyOf")}
    shape: dict[str, Any] = {}
    for raw in [*(schema.get("oneOf") or []), *(schema.get("anyOf") or [])]:
        member, member_resolver = resolver.follow(raw)
        _merge(shape, _canonical(_joined(common, member), member_resolver, rules, seen))
    alternatives = shape.pop("alternatives", [])
    if len(alternatives) == 1:
        shape.update(alternatives[0])
    elif alternatives:
        shape["alternatives"] = sorted(
            alternatives, key=lambda item: json.dumps(item, sort_keys=True)
        )
    return shape


def _canonical_schema(schema: Any, resolver: Resolver, *, response: bool = False) -> Any:
    """The form `compare_documents` compares a request (or `response`) schema in."""
    return _canonical(schema, resolver, RESPONSE if response else REQUEST, frozenset())


# --------------------------------------------------------------------------------------------------
# Comparing canonical shapes


STRUCTURE = ("type", "properties", "required", "items", "alternatives")
"""Keys compared whichever side has them; the others (bounds, `enum`, `default`) are compared
when the code declares them: a contract may document a rule the handler enforces by hand."""


def _listing(values: Any) -> str:
    if values is None:
        return "-"
    if isinstance(values, list):
        return ", ".join(value if isinstance(value, str) else json.dumps(value) for value in values)
    return json.dumps(values)


def _differ(code: Any, contract: Any, where: str, *, response: bool) -> Iterator[str]:
    if isinstance(code, dict) and isinstance(contract, dict):
        yield from _differ_shapes(code, contract, where, response=response)
    elif code != contract:
        yield f"{where}: code {_listing(code)}, contract {_listing(contract)}"


def _compared(key: str, code: dict[str, Any], contract: dict[str, Any], response: bool) -> bool:
    if key in STRUCTURE:
        return True
    if response or key == "default":
        return key in code and key in contract
    return key in code


def _differ_shapes(
    code: dict[str, Any], contract: dict[str, Any], where: str, *, response: bool
) -> Iterator[str]:
    if code.pop("optional", False) and "null" not in contract.get("type", ["null"]):
        code["type"] = [kind for kind in code["type"] if kind != "null"]
    contract.pop("optional", None)
    if "properties" in code and "alternatives" in contract and "properties" not in contract:
        yield from _differ_narrowed(code, contract.pop("alternatives"), where, response=response)
        contract.update(properties=code["properties"], required=code.get("required", []))
    for key in sorted(code.keys() | contract.keys()):
        if not _compared(key, code, contract, response):
            continue
        mine, theirs = code.get(key), contract.get(key)
        if key == "properties" and mine is not None and theirs is not None:
            yield from _differ_properties(mine, theirs, where, response=response)
        elif key == "items" and mine is not None and theirs is not None:
            yield from _differ(mine, theirs, f"{where}[]", response=response)
        elif key in ("type", "enum", "required") and mine is not None and theirs is not None:
            yield from _differ_lists(key, mine, theirs, where)
        elif mine != theirs:
            yield f"{where}: {key}: code {_listing(mine)}, contract {_listing(theirs)}"


def _differ_narrowed(
    code: dict[str, Any], alternatives: list[dict[str, Any]], where: str, *, response: bool
) -> Iterator[str]:
    """One object in the code, several in the contract: a rule the handler enforces by hand
    (such as "exactly one of `image_url` and `image_base64`"). Each alternative has the code's
    properties and requires at least what the code requires."""
    required = set(code.get("required", []))
    for alternative in alternatives:
        missing = sorted(required - set(alternative.get("required", [])))
        if missing:
            yield f"{where}: an alternative does not require {_listing(missing)}"
        mine = {key: value for key, value in code.items() if key not in ("type", "required")}
        theirs = {key: value for key, value in alternative.items() if key != "required"}
        yield from _differ(mine, theirs, where, response=response)


def _differ_lists(key: str, code: list[Any], contract: list[Any], where: str) -> Iterator[str]:
    only_code = [value for value in code if value not in contract]
    only_contract = [value for value in contract if value not in code]
    parts = []
    if only_code:
        parts.append(f"only the code has {_listing(only_code)}")
    if only_contract:
        parts.append(f"only the contract has {_listing(only_contract)}")
    if parts:
        yield f"{where}: {key}: {'; '.join(parts)}"


def _differ_properties(
    code: dict[str, Any], contract: dict[str, Any], where: str, *, response: bool
) -> Iterator[str]:
    for name in sorted(code.keys() - contract.keys()):
        yield f"{where}.{name}: only in the code"
    for name in sorted(contract.keys() - code.keys()):
        yield f"{where}.{name}: only in the contract"
    for name in sorted(code.keys() & contract.keys()):
        yield from _differ(code[name], contract[name], f"{where}.{name}", response=response)


# --------------------------------------------------------------------------------------------------
# Operations


@dataclass(frozen=True, slots=True)
class _Operation:
    label: str
    operation: Mapping[str, Any]
    parameters: Mapping[tuple[str, str], Mapping[str, Any]]
    resolver: Resolver
    requires_auth: bool


def _requires_auth(security: Any) -> bool:
    return isinstance(security, list) and bool(security) and all(security)


def _operations_of(document: Mapping[str, Any], resolver: Resolver) -> dict[str, _Operation]:
    """`"METHOD /path"` -> the operation, its parameters (path-level ones included) by
    (name, location), and whether it needs a key."""
    found: dict[str, _Operation] = {}
    for path, raw_item in (document.get("paths") or {}).items():
        item, item_resolver = resolver.follow(raw_item)
        shared = item.get("parameters") or []
        for method in HTTP_METHODS:
            if not isinstance(item.get(method), Mapping):
                continue
            operation = item[method]
            parameters: dict[tuple[str, str], Mapping[str, Any]] = {}
            for raw in [*shared, *(operation.get("parameters") or [])]:
                parameter, _ = item_resolver.follow(raw)
                parameters[(parameter["name"], parameter["in"])] = parameter
            security = operation.get("security", document.get("security", []))
            label = f"{method.upper()} {path}"
            found[label] = _Operation(
                label, operation, parameters, item_resolver, _requires_auth(security)
            )
    return found


def _differ_flag(where: str, code: Mapping[str, Any], contract: Mapping[str, Any]) -> Iterator[str]:
    mine, theirs = bool(code.get("required")), bool(contract.get("required"))
    if mine != theirs:
        yield f"{where}: code {mine}, contract {theirs}"


def _parameter_problems(code: _Operation, contract: _Operation) -> Iterator[str]:
    for name, location in sorted(code.parameters.keys() - contract.parameters.keys()):
        yield f"parameter {name} ({location}): only in the code"
    for name, location in sorted(contract.parameters.keys() - code.parameters.keys()):
        if location in LOCATIONS_GENERATORS_SEE:
            yield f"parameter {name} ({location}): only in the contract"
    for key in sorted(code.parameters.keys() & contract.parameters.keys()):
        mine, theirs = code.parameters[key], contract.parameters[key]
        where = f"parameter {key[0]} ({key[1]})"
        yield from _differ_flag(f"{where}: required", mine, theirs)
        yield from _differ(
            _canonical(mine.get("schema", {}), code.resolver, PARAMETER, frozenset()),
            _canonical(theirs.get("schema", {}), contract.resolver, PARAMETER, frozenset()),
            where,
            response=False,
        )


def _content(operation: _Operation, node: Any) -> tuple[Mapping[str, Any], Resolver]:
    body, resolver = operation.resolver.follow(node)
    return (body if isinstance(body, Mapping) else {}), resolver


def _is_json(media_type: str) -> bool:
    return media_type == "application/json" or media_type.endswith("+json")


def _body_problems(code: _Operation, contract: _Operation) -> Iterator[str]:
    mine, mine_resolver = _content(code, code.operation.get("requestBody"))
    theirs, theirs_resolver = _content(contract, contract.operation.get("requestBody"))
    yield from _differ_flag("request body: required", mine, theirs)
    mine_types, theirs_types = mine.get("content") or {}, theirs.get("content") or {}
    if set(mine_types) != set(theirs_types):
        yield f"request body: media types: code {_listing(sorted(mine_types))}, contract " + (
            _listing(sorted(theirs_types))
        )
    for media_type in sorted(set(mine_types) & set(theirs_types)):
        yield from _differ(
            _canonical_schema(mine_types[media_type].get("schema", {}), mine_resolver),
            _canonical_schema(theirs_types[media_type].get("schema", {}), theirs_resolver),
            f"request body {media_type} $",
            response=False,
        )


def _response_problems(code: _Operation, contract: _Operation) -> Iterator[str]:
    documented = contract.operation.get("responses") or {}
    for status, raw in sorted((code.operation.get("responses") or {}).items()):
        if not str(status).startswith("2"):
            continue
        if str(status) not in {str(key) for key in documented}:
            yield f"response {status}: the code answers it, the contract does not document it"
            continue
        if code.label.startswith("HEAD "):
            continue  # no body: its media types and shape are GET's
        mine, mine_resolver = _content(code, raw)
        theirs, theirs_resolver = _content(contract, documented[status])
        mine_types, theirs_types = mine.get("content") or {}, theirs.get("content") or {}
        missing = sorted(set(mine_types) - set(theirs_types))
        if missing:
            yield f"response {status}: media types not in the contract: {_listing(missing)}"
        for media_type in sorted(set(mine_types) & set(theirs_types)):
            if _is_json(media_type):
                yield from _differ(
                    _canonical_schema(
                        mine_types[media_type].get("schema", {}), mine_resolver, response=True
                    ),
                    _canonical_schema(
                        theirs_types[media_type].get("schema", {}), theirs_resolver, response=True
                    ),
                    f"response {status} {media_type} $",
                    response=True,
                )


def _compare_operation(code: _Operation, contract: _Operation) -> list[str]:
    problems: list[str] = []
    if code.requires_auth != contract.requires_auth:
        needs = {True: "needs an API key", False: "is public"}
        problems.append(
            f"security: the code {needs[code.requires_auth]}, "
            f"the contract says it {needs[contract.requires_auth]}"
        )
    problems += _parameter_problems(code, contract)
    problems += _body_problems(code, contract)
    problems += _response_problems(code, contract)
    return problems


def compare_documents(
    code: Mapping[str, Any],
    contract: Mapping[str, Any],
    *,
    contract_location: str | os.PathLike[str] | None = None,
) -> list[str]:
    """Every difference between the operations of `code` (a generated document) and `contract`
    (whose external `$ref`s resolve from `contract_location`), as `"METHOD /path: ..."` lines."""
    location = Path(contract_location).resolve() if contract_location is not None else None
    served = _operations_of(code, Resolver(code))
    documented = _operations_of(contract, Resolver(contract, location))
    problems = [
        f"{label}: served, not in the contract"
        for label in sorted(served.keys() - documented.keys())
    ]
    problems += [
        f"{label}: in the contract, not served"
        for label in sorted(documented.keys() - served.keys())
    ]
    for label in sorted(served.keys() & documented.keys()):
        found = _compare_operation(served[label], documented[label])
        problems += [f"{label}: {problem}" for problem in dict.fromkeys(found)]
    return problems


__all__ = ["Resolver", "compare_documents"]
