"""Contract tests against a live gateway, as pytest tests:

    pytest --pyargs tollway_harness.live --tollway-url http://127.0.0.1:8000 --tollway-key tw_...

One test per product (`--tollway-product` to choose); skipped without `--tollway-url`.
"""

from __future__ import annotations

from tollway_harness.pytest_plugin import ContractCheck


def test_contract(tollway_product: str, tollway_check: ContractCheck) -> None:
    tollway_check(tollway_product)
