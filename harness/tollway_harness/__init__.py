"""Contract test harness for Tollway gateway builds.

Tests any build from the outside - an ASGI app object in-process, or a live base URL - against
the hand-written OpenAPI contracts in `contracts/`, or against the document a gateway serves, with
schemathesis; and compares a build's generated OpenAPI document with its contracts, operation by
operation (`compare_documents`). It never imports `tollway`.

    from tollway_harness import check_contract
    check_contract("code", app=app, key="tw_...")          # raises AssertionError on failure
    report = run_contract("code", url="http://127.0.0.1:8000", key="tw_...")
    report = run_contract("code", url=URL, key=KEY, schema_url=f"{URL}/schema/openapi.json")
"""

from __future__ import annotations

from tollway_harness.contracts import (
    ContractError,
    fetch_document,
    find_contracts_dir,
    lint_contract,
    list_products,
    resolve_contract,
    served_document_url,
    served_products,
)
from tollway_harness.drift import Resolver, compare_documents
from tollway_harness.report import ContractReport, Failure, OperationStats, write_junit_xml
from tollway_harness.runner import (
    ALL_PHASES,
    DEFAULT_MAX_EXAMPLES,
    check_contract,
    load_schema,
    run_contract,
)

__all__ = [
    "ALL_PHASES",
    "DEFAULT_MAX_EXAMPLES",
    "ContractError",
    "ContractReport",
    "Failure",
    "OperationStats",
    "Resolver",
    "check_contract",
    "compare_documents",
    "fetch_document",
    "find_contracts_dir",
    "lint_contract",
    "list_products",
    "load_schema",
    "resolve_contract",
    "run_contract",
    "served_document_url",
    "served_products",
    "write_junit_xml",
]
