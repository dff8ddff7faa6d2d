"""Finding, naming and linting the product contracts: OpenAPI 3.1 files in a `contracts/` dir, or
the document a gateway serves (`/schema/openapi.json`), whose operations name their product in
`x-product`."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CONTRACTS_ENV = "TOLLWAY_CONTRACTS"
COMMON_CONTRACT = "common.yaml"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# Operation-level vendor extension: statuses an operation may answer to schema-valid input that it
# rejects on domain rules the schema cannot express (e.g. a barcode's check digit).
DOMAIN_REJECTIONS_EXTENSION = "x-domain-rejections"
# Operation-level vendor extension of a served document: the product the operation belongs to.
PRODUCT_EXTENSION = "x-product"
SERVED_DOCUMENT_PATH = "/schema/openapi.json"


class ContractError(Exception):
    """A contract cannot be found, read, or is unusable for testing."""


def _repo_contracts_dir() -> Path:
    # <repo>/harness/tollway_harness/contracts.py -> <repo>/contracts (works in editable installs).
    return Path(__file__).resolve().parent.parent.parent / "contracts"


def find_contracts_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The contracts directory.

    `explicit`, else $TOLLWAY_CONTRACTS, else ./contracts if it exists, else the repository's
    `contracts/` next to this package's source (editable installs).
    """
    if explicit is not None:
        candidate = Path(explicit)
    elif os.environ.get(CONTRACTS_ENV):
        candidate = Path(os.environ[CONTRACTS_ENV])
    elif (Path.cwd() / "contracts").is_dir():
        candidate = Path.cwd() / "contracts"
    else:
        candidate = _repo_contracts_dir()
    if not candidate.is_dir():
        raise ContractError(f"contracts directory not found: {candidate}")
    return candidate.resolve()


def list_products(contracts_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """Product names: every `*.yaml` in the contracts directory except `common.yaml`, sorted."""
    directory = find_contracts_dir(contracts_dir)
    return sorted(p.stem for p in directory.glob("*.yaml") if p.name != COMMON_CONTRACT)


def resolve_contract(
    contract: str | os.PathLike[str], contracts_dir: str | os.PathLike[str] | None = None
) -> Path:
    """A contract's file: a path is used as is, a bare name is `<contracts dir>/<name>.yaml`."""
    text = os.fspath(contract)
    looks_like_path = "/" in text or os.sep in text or text.endswith((".yaml", ".yml", ".json"))
    if looks_like_path or isinstance(contract, os.PathLike):
        path = Path(text)
        if not path.is_file():
            raise ContractError(f"contract file not found: {path}")
        return path.resolve()
    path = find_contracts_dir(contracts_dir) / f"{text}.yaml"
    if not path.is_file():
        raise ContractError(f"no contract for product {text!r}: {path} does not exist")
    return path


@dataclass(frozen=True, slots=True)
class OperationInfo:
    """What the harness needs to know about one operation of a contract."""

    label: str  # "POST /v1/code/qr", the same label schemathesis uses
    operation_id: str | None
    requires_auth: bool
    domain_rejections: tuple[str, ...]
    product: str | None = None  # `x-product` of a served document's operation


def load_raw(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ContractError(f"cannot read contract {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ContractError(f"contract {path} is not a YAML mapping")
    return data


def _requires_auth(security: Any) -> bool:
    # OpenAPI: a list of alternatives; `[]` or any `{}` alternative means "no auth needed".
    if not isinstance(security, list) or not security:
        return False
    return all(isinstance(item, dict) and item for item in security)


def operations(raw: dict[str, Any]) -> list[OperationInfo]:
    """Every operation of a loaded contract, in document order."""
    top_security = raw.get("security", [])
    result: list[OperationInfo] = []
    for path, item in (raw.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        for method in HTTP_METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            rejections = op.get(DOMAIN_REJECTIONS_EXTENSION, [])
            result.append(
                OperationInfo(
                    label=f"{method.upper()} {path}",
                    operation_id=op.get("operationId"),
                    requires_auth=_requires_auth(op.get("security", top_security)),
                    domain_rejections=tuple(str(s) for s in rejections),
                    product=op.get(PRODUCT_EXTENSION),
                )
            )
    return result


def lint_contract(path: Path | str, raw: dict[str, Any] | None = None) -> list[str]:
    """Problems that make schemathesis silently test less than the contract says.

    - a security requirement naming a scheme missing from *this file's* `components.securitySchemes`
      (schemathesis then treats the operation as public and never checks that auth is enforced;
      a shared scheme must be re-declared locally as `apiKey: {$ref: "common.yaml#/..."}`);
    - not OpenAPI 3.x.

    `path` is the contract's file, or the URL of a served document (then `raw` is required).
    """
    if raw is None:
        raw = load_raw(Path(path))
    name = str(path) if "://" in str(path) else Path(path).name
    problems: list[str] = []
    version = str(raw.get("openapi", ""))
    if not version.startswith("3."):
        problems.append(f"{name}: not an OpenAPI 3.x document (openapi: {version or 'missing'})")
    schemes = set(((raw.get("components") or {}).get("securitySchemes") or {}).keys())
    requirements: list[tuple[str, Any]] = [("top-level security", raw.get("security", []))]
    for path_key, item in (raw.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        for method in HTTP_METHODS:
            op = item.get(method)
            if isinstance(op, dict) and "security" in op:
                requirements.append((f"{method.upper()} {path_key}", op["security"]))
    for where, security in requirements:
        for alternative in security or []:
            for scheme in alternative or {}:
                if scheme not in schemes:
                    problems.append(
                        f"{name}: {where} uses security scheme {scheme!r}, which is not "
                        "declared in this file's components.securitySchemes (declare it, e.g. "
                        f'`{scheme}: {{$ref: "common.yaml#/components/securitySchemes/{scheme}"}}`)'
                    )
    return problems


def served_document_url(base_url: str) -> str:
    """Where a gateway at `base_url` serves its OpenAPI document."""
    return base_url.rstrip("/") + SERVED_DOCUMENT_PATH


def fetch_document(url: str, timeout: float = 30.0) -> dict[str, Any]:
    """The OpenAPI document (JSON or YAML) at `url`."""
    request = urllib.request.Request(url, headers={"Accept": "application/json, application/yaml"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode("utf-8")
    except (OSError, urllib.error.URLError, UnicodeDecodeError) as exc:
        raise ContractError(f"cannot fetch the OpenAPI document at {url}: {exc}") from exc
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ContractError(f"the document at {url} is neither JSON nor YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ContractError(f"the document at {url} is not an OpenAPI document")
    return data


def served_products(document: dict[str, Any]) -> list[str]:
    """The products of a served document: the `x-product`s of its operations, sorted."""
    return sorted({op.product for op in operations(document) if op.product is not None})


def product_document(document: dict[str, Any], product: str) -> dict[str, Any]:
    """A served `document` cut down to `product`'s operations (its components are kept whole),
    so that a run of one product neither sees nor follows links to the others."""
    paths: dict[str, Any] = {}
    for path, item in (document.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        mine = {
            method: op
            for method, op in item.items()
            if method in HTTP_METHODS
            and isinstance(op, dict)
            and op.get(PRODUCT_EXTENSION) == product
        }
        if mine:
            shared = {key: value for key, value in item.items() if key not in HTTP_METHODS}
            paths[path] = {**shared, **mine}
    if not paths:
        products = ", ".join(served_products(document)) or "none"
        raise ContractError(
            f"the document has no operations of product {product!r}; it has: {products}"
        )
    return {**document, "paths": paths}
