"""`compare_documents`: what it compares between a generated document and a contract, and what it
leaves to the contract. The documents are small hand-written ones shaped like Litestar's output."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tollway_harness import ContractError, Resolver, compare_documents

GENERATED: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "generated", "version": "1"},
    "paths": {
        "/v1/things": {
            "get": {
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "integer", "minimum": 1.0, "maximum": 50.0},
                    },
                    {
                        "name": "owner",
                        "in": "query",
                        "required": False,
                        "schema": {"oneOf": [{"type": "integer"}, {"type": "null"}], "minimum": 1},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}
                        },
                    },
                    "400": {"description": "Bad request syntax or unsupported method"},
                },
                "security": [{"apiKey": []}],
            },
            "post": {
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/NewThing"}}
                    },
                },
                "responses": {
                    "201": {
                        "description": "created",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}
                        },
                    }
                },
                "security": [{"apiKey": []}],
            },
        },
        "/v1/things/picture": {
            "get": {
                "responses": {
                    "200": {"description": "ok", "content": {"image/png": {"schema": {}}}}
                },
            }
        },
    },
    "components": {
        "schemas": {
            "NewThing": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 20},
                    "kind": {"type": "string", "enum": ["a", "b"], "default": "a"},
                    "parent": {"oneOf": [{"type": "integer"}, {"type": "null"}], "minimum": 1},
                    "url": {"oneOf": [{"type": "string"}], "maxLength": 200},
                    "picture": {"oneOf": [{"type": "string"}], "maxLength": 1000},
                },
            },
            "Thing": {
                "type": "object",
                "required": ["id", "name"],
                "properties": {
                    "id": {"type": "string"},
                    "name": {"type": "string"},
                    "note": {"oneOf": [{"type": "string"}, {"type": "null"}]},
                },
            },
        }
    },
}

CONTRACT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "contract", "version": "1"},
    "security": [{"apiKey": []}],
    "paths": {
        "/v1/things": {
            "get": {
                "parameters": [
                    {"$ref": "#/components/parameters/Limit"},
                    {"name": "owner", "in": "query", "schema": {"type": "integer", "minimum": 1}},
                    # Read by the handler itself: generators cannot see it.
                    {"name": "If-None-Match", "in": "header", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {
                        "description": "the thing",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}
                        },
                    },
                    "401": {"description": "no key"},
                    "429": {"description": "slow down"},
                },
            },
            "post": {
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/NewThing"}}
                    },
                },
                "responses": {
                    "201": {
                        "description": "created",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}
                        },
                    },
                    "409": {"description": "exists"},
                },
            },
        },
        "/v1/things/picture": {
            "get": {
                "security": [],
                "responses": {
                    "200": {
                        "description": "PNG or SVG",
                        "content": {"image/png": {}, "image/svg+xml": {}},
                    }
                },
            }
        },
    },
    "components": {
        "parameters": {
            "Limit": {
                "name": "limit",
                "in": "query",
                "schema": {"type": "integer", "minimum": 1, "maximum": 50, "default": 20},
            }
        },
        "schemas": {
            "Kind": {"type": "string", "enum": ["a", "b"]},
            "NewThing": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name"],
                "properties": {
                    # A rule the handler enforces by hand: the contract may add it.
                    "name": {"type": "string", "minLength": 1, "maxLength": 20, "pattern": "^\\S"},
                    "kind": {"$ref": "#/components/schemas/Kind", "default": "a"},
                    "parent": {"type": ["integer", "null"], "minimum": 1},
                    "url": {"type": "string", "maxLength": 200, "format": "uri"},
                    "picture": {"type": "string", "maxLength": 1000},
                },
                # "exactly one of url and picture", checked by the handler
                "oneOf": [{"required": ["url"]}, {"required": ["picture"]}],
            },
            "Thing": {
                "type": "object",
                "required": ["id", "name"],
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "name": {"type": "string"},
                    # optional in the code, omitted rather than null: "string" is right
                    "note": {"type": "string"},
                },
            },
        },
    },
}


def _contract() -> dict[str, Any]:
    return copy.deepcopy(CONTRACT)


def test_a_contract_documenting_what_the_code_does_has_no_drift() -> None:
    assert compare_documents(GENERATED, CONTRACT) == []


def test_operations_and_security_must_match() -> None:
    contract = _contract()
    contract["paths"]["/v1/other"] = contract["paths"].pop("/v1/things/picture")
    del contract["paths"]["/v1/other"]["get"]["security"]
    assert compare_documents(GENERATED, contract) == [
        "GET /v1/things/picture: served, not in the contract",
        "GET /v1/other: in the contract, not served",
    ]
    contract = _contract()
    contract["paths"]["/v1/things/picture"]["get"]["security"] = [{"apiKey": []}]
    assert compare_documents(GENERATED, contract) == [
        "GET /v1/things/picture: security: the code is public, the contract says it needs an "
        "API key"
    ]


def test_parameters_are_compared_by_name_location_required_and_schema() -> None:
    contract = _contract()
    limit = contract["components"]["parameters"]["Limit"]
    limit["schema"]["maximum"] = 100
    limit["required"] = True
    contract["paths"]["/v1/things"]["get"]["parameters"].append(
        {"name": "sort", "in": "query", "schema": {"type": "string"}}
    )
    assert compare_documents(GENERATED, contract) == [
        "GET /v1/things: parameter sort (query): only in the contract",
        "GET /v1/things: parameter limit (query): required: code False, contract True",
        "GET /v1/things: parameter limit (query): maximum: code 50.0, contract 100",
    ]


def test_a_header_the_code_declares_must_be_documented() -> None:
    generated = copy.deepcopy(GENERATED)
    generated["paths"]["/v1/things"]["get"]["parameters"].append(
        {"name": "X-Tenant", "in": "header", "required": True, "schema": {"type": "string"}}
    )
    assert compare_documents(generated, CONTRACT) == [
        "GET /v1/things: parameter X-Tenant (header): only in the code"
    ]


def test_request_bodies_are_compared_in_depth() -> None:
    contract = _contract()
    schemas = contract["components"]["schemas"]
    schemas["Kind"]["enum"] = ["a"]  # the code also accepts "b"
    new_thing = schemas["NewThing"]
    new_thing["properties"]["parent"]["type"] = "integer"  # the code also accepts null
    new_thing["properties"]["name"]["maxLength"] = 30
    new_thing["properties"]["extra"] = {"type": "boolean"}
    new_thing["properties"]["kind"]["default"] = "b"
    assert compare_documents(GENERATED, contract) == [
        "POST /v1/things: request body application/json $.extra: only in the contract",
        'POST /v1/things: request body application/json $.kind: default: code "a", contract "b"',
        'POST /v1/things: request body application/json $.kind: enum: only the code has "b"',
        "POST /v1/things: request body application/json $.name: maxLength: code 20, contract 30",
        "POST /v1/things: request body application/json $.parent: type: only the code has null",
    ]


def test_required_properties_and_narrowing_alternatives() -> None:
    contract = _contract()
    new_thing = contract["components"]["schemas"]["NewThing"]
    new_thing["required"] = []
    assert compare_documents(GENERATED, contract) == [
        "POST /v1/things: request body application/json $: an alternative does not require name"
    ]
    del new_thing["oneOf"]
    assert compare_documents(GENERATED, contract) == [
        "POST /v1/things: request body application/json $: required: only the code has name"
    ]


def test_the_success_response_is_documented_with_the_same_shape() -> None:
    contract = _contract()
    thing = contract["components"]["schemas"]["Thing"]
    thing["properties"]["id"]["type"] = ["string", "null"]
    thing["properties"]["note"]["type"] = "integer"
    del thing["properties"]["name"]
    picture = contract["paths"]["/v1/things/picture"]["get"]["responses"]["200"]
    del picture["content"]["image/png"]
    created = contract["paths"]["/v1/things"]["post"]["responses"]
    created["200"] = created.pop("201")
    assert compare_documents(GENERATED, contract) == [
        "GET /v1/things: response 200 application/json $.name: only in the code",
        "GET /v1/things: response 200 application/json $.id: type: only the contract has null",
        "GET /v1/things: response 200 application/json $.note: type: only the code has string; "
        "only the contract has integer",
        "GET /v1/things/picture: response 200: media types not in the contract: image/png",
        "POST /v1/things: response 201: the code answers it, the contract does not document it",
    ]


def test_a_nullable_optional_response_field_may_be_documented_as_nullable() -> None:
    contract = _contract()
    contract["components"]["schemas"]["Thing"]["properties"]["note"]["type"] = ["string", "null"]
    assert compare_documents(GENERATED, contract) == []


def test_references_resolve_into_sibling_files(tmp_path: Path) -> None:
    (tmp_path / "common.yaml").write_text(
        "components:\n  schemas:\n    Name: {type: string, minLength: 1, maxLength: 20}\n"
    )
    contract = _contract()
    name = {"$ref": "common.yaml#/components/schemas/Name"}
    contract["components"]["schemas"]["NewThing"]["properties"]["name"] = name
    assert compare_documents(GENERATED, contract, contract_location=tmp_path / "x.yaml") == []
    with pytest.raises(ContractError, match="leaves the document"):
        compare_documents(GENERATED, contract)


def test_a_reference_to_itself_is_refused() -> None:
    document = {"components": {"schemas": {"Loop": {"$ref": "#/components/schemas/Loop"}}}}
    with pytest.raises(ContractError, match="refers to itself"):
        Resolver(document).inline({"$ref": "#/components/schemas/Loop"})
