"""pytest plugin (entry point `pytest11: tollway_harness`).

Options: `--tollway-url`, `--tollway-key`, `--tollway-product` (repeatable), `--tollway-contracts`,
`--tollway-schema-url` (a URL, or `auto` for the document the gateway at `--tollway-url` serves),
`--tollway-max-examples`. Fixtures:

- `tollway_harness_options`: the options above, resolved (key falls back to $TOLLWAY_KEY);
- `tollway_check(contract, *, app=None, url=None, key=None, **kwargs)`: `check_contract` with
  url/key/contracts/schema-url/max-examples defaulting to the options - in-process when given `app`;
- `tollway_product`: a test requesting it is parametrized over the selected products
  (`--tollway-product`, else every contract, or every product of the `--tollway-schema-url`).

`pytest --pyargs tollway_harness.live --tollway-url URL --tollway-key KEY` runs the contract
suite against a live gateway as ordinary pytest tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Protocol

import pytest

from tollway_harness.cli import AUTO, KEY_ENV
from tollway_harness.contracts import (
    ContractError,
    fetch_document,
    list_products,
    served_document_url,
    served_products,
)
from tollway_harness.report import ContractReport
from tollway_harness.runner import DEFAULT_MAX_EXAMPLES, check_contract


@dataclass(frozen=True, slots=True)
class HarnessOptions:
    url: str | None
    key: str | None
    products: tuple[str, ...]
    contracts_dir: str | None
    schema_url: str | None
    max_examples: int


class ContractCheck(Protocol):
    def __call__(
        self,
        contract: str | os.PathLike[str],
        *,
        app: Any = None,
        url: str | None = None,
        key: str | None = None,
        **kwargs: Any,
    ) -> ContractReport: ...


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tollway-harness", "Tollway contract tests")
    group.addoption("--tollway-url", default=None, help="base URL of a live gateway to test")
    group.addoption("--tollway-key", default=None, help=f"API key (default: ${KEY_ENV})")
    group.addoption(
        "--tollway-product",
        action="append",
        default=[],
        help="product contract to test (repeatable; default: all)",
    )
    group.addoption("--tollway-contracts", default=None, help="contracts directory")
    group.addoption(
        "--tollway-schema-url",
        default=None,
        help="test the OpenAPI document at this URL ('auto': the one --tollway-url serves)",
    )
    group.addoption(
        "--tollway-max-examples",
        type=int,
        default=DEFAULT_MAX_EXAMPLES,
        help="examples per operation and phase",
    )


def _options(config: pytest.Config) -> HarnessOptions:
    key = config.getoption("--tollway-key") or os.environ.get(KEY_ENV)
    url = config.getoption("--tollway-url")
    schema_url = config.getoption("--tollway-schema-url")
    if schema_url == AUTO:
        if url is None:
            raise pytest.UsageError("--tollway-schema-url auto needs --tollway-url")
        schema_url = served_document_url(url)
    return HarnessOptions(
        url=url,
        key=key,
        products=tuple(config.getoption("--tollway-product")),
        contracts_dir=config.getoption("--tollway-contracts"),
        schema_url=schema_url,
        max_examples=config.getoption("--tollway-max-examples"),
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "tollway_product" not in metafunc.fixturenames:
        return
    options = _options(metafunc.config)
    products: list[str] = list(options.products)
    if not products:
        try:
            if options.schema_url is not None:
                products = served_products(fetch_document(options.schema_url))
            else:
                products = list_products(options.contracts_dir)
        except ContractError:
            products = []
    metafunc.parametrize("tollway_product", products)


@pytest.fixture(scope="session")
def tollway_harness_options(pytestconfig: pytest.Config) -> HarnessOptions:
    return _options(pytestconfig)


@pytest.fixture
def tollway_check(tollway_harness_options: HarnessOptions) -> ContractCheck:
    options = tollway_harness_options

    def check(
        contract: str | os.PathLike[str],
        *,
        app: Any = None,
        url: str | None = None,
        key: str | None = None,
        **kwargs: Any,
    ) -> ContractReport:
        __tracebackhide__ = True
        if app is None and url is None:
            url = options.url
            if url is None:
                pytest.skip("no target: pass `app=` or run pytest with --tollway-url")
        kwargs.setdefault("contracts_dir", options.contracts_dir)
        kwargs.setdefault("schema_url", options.schema_url)
        kwargs.setdefault("max_examples", options.max_examples)
        return check_contract(
            contract, app=app, url=url, key=key if key is not None else options.key, **kwargs
        )

    return check
