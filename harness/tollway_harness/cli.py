"""`tollway-harness`: run the contract suite against a live gateway."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from tollway_harness.contracts import (
    ContractError,
    fetch_document,
    find_contracts_dir,
    list_products,
    served_document_url,
    served_products,
)
from tollway_harness.report import ContractReport, write_junit_xml
from tollway_harness.runner import ALL_PHASES, DEFAULT_MAX_EXAMPLES, DEFAULT_SEED, run_contract

KEY_ENV = "TOLLWAY_KEY"
AUTO = "auto"
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tollway-harness",
        description="Contract tests for Tollway gateway builds (schemathesis under the hood).",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run",
        help="run the contract suite against a live gateway",
        description="Run every check of the given products' contracts against URL. "
        "Exits 0 only if all checks pass.",
    )
    run.add_argument(
        "--url", required=True, help="base URL of the gateway, e.g. http://127.0.0.1:8000"
    )
    run.add_argument(
        "--key",
        default=os.environ.get(KEY_ENV),
        help=f"API key sent as 'Authorization: Bearer KEY' (default: ${KEY_ENV})",
    )
    run.add_argument(
        "--product",
        action="append",
        dest="products",
        metavar="P",
        help="product to test (repeatable; default: every contract except common.yaml)",
    )
    run.add_argument(
        "--contracts",
        default=None,
        metavar="DIR",
        help="contracts directory (default: $TOLLWAY_CONTRACTS, ./contracts, the repo's)",
    )
    run.add_argument(
        "--schema-url",
        default=None,
        metavar="URL",
        help="test the OpenAPI document at URL instead of contract files ('auto': the one the "
        "gateway serves, URL/schema/openapi.json); its operations name their product in x-product",
    )
    run.add_argument("--max-examples", type=int, default=DEFAULT_MAX_EXAMPLES, metavar="N")
    run.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N")
    run.add_argument(
        "--phase",
        action="append",
        dest="phases",
        choices=ALL_PHASES,
        help="phase to run (repeatable; default: all)",
    )
    run.add_argument("--request-timeout", type=float, default=10.0, metavar="SECONDS")
    run.add_argument("--junit-xml", default=None, metavar="FILE", help="write a JUnit XML report")
    run.add_argument(
        "-v", "--verbose", action="store_true", help="print full reports of passing products too"
    )

    listing = commands.add_parser("list", help="list the products that have a contract")
    listing.add_argument("--contracts", default=None, metavar="DIR")
    listing.add_argument(
        "--schema-url", default=None, metavar="URL", help="list the products of this document"
    )
    return parser


def _products(args: argparse.Namespace, schema_url: str | None) -> list[str]:
    if schema_url is not None:
        return served_products(fetch_document(schema_url))
    return list_products(find_contracts_dir(args.contracts))


def _run(args: argparse.Namespace) -> int:
    if args.max_examples < 1:
        print("tollway-harness: --max-examples must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    schema_url = served_document_url(args.url) if args.schema_url == AUTO else args.schema_url
    try:
        contracts = None if schema_url is not None else find_contracts_dir(args.contracts)
        products = args.products or _products(args, schema_url)
    except ContractError as exc:
        print(f"tollway-harness: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not products:
        print(f"tollway-harness: no contracts in {schema_url or contracts}", file=sys.stderr)
        return EXIT_USAGE

    reports: list[ContractReport] = []
    for product in products:
        try:
            report = run_contract(
                product,
                url=args.url,
                key=args.key,
                contracts_dir=contracts,
                schema_url=schema_url,
                max_examples=args.max_examples,
                seed=args.seed,
                phases=args.phases or ALL_PHASES,
                request_timeout=args.request_timeout,
            )
        except ContractError as exc:
            print(f"tollway-harness: {exc}", file=sys.stderr)
            return EXIT_USAGE
        reports.append(report)
        print(report.format() if (args.verbose or not report.ok) else report.summary(), flush=True)

    if args.junit_xml:
        write_junit_xml(reports, args.junit_xml)
    failed = [r.product for r in reports if not r.ok]
    passed = len(reports) - len(failed)
    print(f"tollway-harness: {passed} passed, {len(failed)} failed")
    return EXIT_FAILED if failed else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "list":
        try:
            for product in _products(args, args.schema_url):
                print(product)
        except ContractError as exc:
            print(f"tollway-harness: {exc}", file=sys.stderr)
            return EXIT_USAGE
        return EXIT_OK
    return _run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
