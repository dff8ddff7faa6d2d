"""The OpenAPI document a gateway serves: the contracts of its installed products.

- :mod:`tollway.openapi.contracts`: where each plugin's packaged contract is, reading it;
- :mod:`tollway.openapi.document`: merging the contracts into one document;
- :mod:`tollway.openapi.reference`: serving it at ``/schema`` with pages to read it.
"""

from tollway.openapi.contracts import common_file, contract_file, read_contract
from tollway.openapi.reference import SCHEMA_PATH, ApiReference, served_document

__all__ = [
    "SCHEMA_PATH",
    "ApiReference",
    "common_file",
    "contract_file",
    "read_contract",
    "served_document",
]
