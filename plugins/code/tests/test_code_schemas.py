"""The code product's own wire types: the batch, the usage report, their JSON names.
The QR and barcode requests are tollway_render's, tested there."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from tollway_code.schemas import (
    BatchQrItem,
    BatchQrRequest,
    BatchQrResult,
    KeyInfo,
    UsageResponse,
)


def test_batch_request_defaults_from_json() -> None:
    batch = msgspec.json.decode(b'{"items": [{"data": "x"}]}', type=BatchQrRequest)
    assert batch.items == [BatchQrItem(data="x", id=None)]
    assert (batch.format, batch.size, batch.ecc, batch.margin) == ("png", 200, "M", 2)


@pytest.mark.parametrize(
    ("struct", "payload"),
    [
        (BatchQrRequest, {"items": []}),
        (BatchQrRequest, {"items": [{"data": "x"}] * 101}),
        (BatchQrRequest, {"items": [{"data": "x", "id": "i" * 65}]}),
        (BatchQrRequest, {"items": [{"data": ""}]}),
        (BatchQrRequest, {"items": [{"data": "x", "name": "n"}]}),
        (BatchQrRequest, {"items": [{"data": "x"}], "ecc": "X"}),
        (BatchQrRequest, {"items": [{"data": "x"}], "unknown": 1}),
    ],
)
def test_request_validation(struct: type[msgspec.Struct], payload: dict[str, Any]) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(payload, struct)
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(msgspec.json.encode(payload), type=struct)


def test_batch_limits_accepted() -> None:
    request = msgspec.convert(
        {"items": [{"data": "x", "id": "i" * 64}] * 100, "size": 1000, "margin": 10},
        BatchQrRequest,
    )
    assert len(request.items) == 100


def test_usage_response_shape() -> None:
    usage = UsageResponse(
        product="code",
        plan="free",
        limit=1000,
        used=10,
        remaining=990,
        window_start="2025-01-01T00:00:00Z",
        resets_at="2025-02-01T00:00:00Z",
        key=KeyInfo(id=1, prefix="tw_live_ab", name="default"),
    )
    decoded = msgspec.json.decode(msgspec.json.encode(usage), type=UsageResponse)
    assert decoded == usage
    assert msgspec.json.decode(msgspec.json.encode(usage))["key"] == {
        "id": 1,
        "prefix": "tw_live_ab",
        "name": "default",
    }


def test_batch_result_wire_name() -> None:
    result = BatchQrResult(id="1", data="x", format="png", width=1, height=1, data_url="d")
    assert b'"dataUrl":"d"' in msgspec.json.encode(result)
