"""HTTP handlers of the code product; rendering lives in ``tollway_render``, whose
:class:`~tollway_render.RenderError` is a 400 saying why the input cannot be rendered.
Every code rendered is counted for the account (:mod:`tollway_code.counter`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from tollway import CurrentCaller, Forbidden, ServiceUnavailable
from tollway_code.content import QrContent
from tollway_code.counter import GenerationCounter
from tollway_code.product import (
    BARCODE_GENERATE,
    BATCH_FEATURE,
    BATCH_WRITE,
    QR_GENERATE,
    USAGE_READ,
)
from tollway_code.schemas import (
    BarcodeRequest,
    BatchQrRequest,
    BatchQrResponse,
    KeyInfo,
    QrRequest,
    TypesResponse,
    UsageResponse,
)
from tollway_code.service import CODE_TYPES, render_batch
from tollway_render import render_barcode, render_qr


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


@post("/qr", scope=QR_GENERATE, status_code=200, media_type="image/png")
async def generate_qr(
    data: JSONBody[QrRequest],
    caller: CurrentCaller,
    request: Request[Any, Any, Any],
    qr_content: NamedDependency[QrContent],
    counter: NamedDependency[GenerationCounter],
) -> Response[bytes]:
    content = qr_content.for_request(request.scope)
    image = render_qr(msgspec.structs.replace(data, data=content(data.data)))
    counter.count(caller.principal.account_id, qr=1)
    return Response(image.content, media_type=image.media_type)


@post("/barcode", scope=BARCODE_GENERATE, status_code=200, media_type="image/png")
async def generate_barcode(
    data: JSONBody[BarcodeRequest],
    caller: CurrentCaller,
    counter: NamedDependency[GenerationCounter],
) -> Response[bytes]:
    image = render_barcode(data)
    counter.count(caller.principal.account_id, barcodes=1)
    return Response(image.content, media_type=image.media_type)


@post("/batch/qr", scope=BATCH_WRITE, status_code=200)
async def generate_qr_batch(
    data: JSONBody[BatchQrRequest],
    caller: CurrentCaller,
    request: Request[Any, Any, Any],
    qr_content: NamedDependency[QrContent],
    counter: NamedDependency[GenerationCounter],
) -> BatchQrResponse:
    if BATCH_FEATURE not in caller.plan.features:
        raise Forbidden(
            f"Batch QR generation needs the Pro plan or higher; "
            f"this account is on the '{caller.plan.name}' plan"
        )
    batch = render_batch(data, qr_content.for_request(request.scope))
    counter.count(caller.principal.account_id, qr=batch.total)
    return batch


@get("/usage", scope=USAGE_READ)
async def usage(caller: CurrentCaller) -> UsageResponse:
    decision = caller.decision
    if decision is None:
        raise ServiceUnavailable("Usage is unavailable while the rate limiter is unreachable")
    principal = caller.principal
    return UsageResponse(
        product=caller.product.name,
        plan=caller.plan.name,
        limit=decision.limit,
        used=decision.limit - decision.remaining,
        remaining=decision.remaining,
        window_start=_iso(decision.reset_at - decision.window),
        resets_at=_iso(decision.reset_at),
        key=KeyInfo(id=principal.key_id, prefix=principal.prefix, name=principal.name),
    )


@get("/types", public=True)
async def code_types() -> TypesResponse:
    return TypesResponse(data=list(CODE_TYPES), total=len(CODE_TYPES))


ROUTES = [generate_qr, generate_barcode, generate_qr_batch, usage, code_types]
