"""HTTP handlers of the background removal product (``/v1/removebg``).

Each handler receives the gateway's :class:`~tollway_removebg.service.RemoveBg` as
``removebg``. Those that only read need no transaction (the service reads through
the database's read path); processing and submitting commit their credits in short
transactions of their own (see :mod:`tollway_removebg.service`).
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, PathParameter

from tollway import CurrentCaller
from tollway_removebg import batch, schemas
from tollway_removebg.product import BATCH_READ, BATCH_WRITE, PROCESS, QUOTA_READ
from tollway_removebg.service import MAX_INLINE_INPUT, RemoveBg

JobId = Annotated[str, PathParameter(min_length=1, max_length=40)]
MAX_BODY = MAX_INLINE_INPUT * 4 // 3 + 64 * 1024
"""A body carrying the largest accepted ``image_base64`` (base64 adds a third)."""


@post(
    "/process",
    scope=PROCESS,
    status_code=200,
    request_max_body_size=MAX_BODY,
)
async def process_image(
    request: Request[Any, Any, Any],
    data: JSONBody[schemas.ProcessRequest],
    caller: CurrentCaller,
    removebg: NamedDependency[RemoveBg],
) -> schemas.ProcessedImage:
    """Cut out one image given by URL or inline as base64; one credit."""
    return await removebg.process(caller, data, removebg.base_url(request.scope))


@post("/batch", scope=BATCH_WRITE, status_code=202)
async def create_batch(
    request: Request[Any, Any, Any],
    data: JSONBody[schemas.BatchCreate],
    caller: CurrentCaller,
    removebg: NamedDependency[RemoveBg],
) -> schemas.BatchSubmitted:
    """Up to 100 image URLs, processed in the background; one credit reserved each.
    ``removebg:images:process`` grants it too."""
    return await batch.submit(removebg, caller, data, removebg.base_url(request.scope))


@get("/batch/{job_id:str}", scope=BATCH_READ)
async def get_batch(
    job_id: JobId,
    caller: CurrentCaller,
    removebg: NamedDependency[RemoveBg],
) -> schemas.BatchJob:
    """Poll every 2 to 5 seconds until ``status`` is ``completed`` or ``failed``.
    ``removebg:images:process`` grants it too."""
    return await batch.status(removebg, caller, job_id)


@get("/quota", scope=QUOTA_READ)
async def get_quota(caller: CurrentCaller, removebg: NamedDependency[RemoveBg]) -> schemas.Quota:
    return await removebg.quota(caller)


@get("/results/{token:str}", public=True, media_type="image/png")
async def download_result(
    token: FromPath[str], removebg: NamedDependency[RemoveBg]
) -> Response[bytes]:
    """A processed image at its signed ``result_url`` (no key: the URL is the credential)."""
    result, seconds_left = await removebg.download(token)
    return Response(
        result.content,
        media_type=result.media_type,
        headers={"Cache-Control": f"private, max-age={seconds_left}"},
    )


ROUTES = [process_image, create_batch, get_batch, get_quota, download_result]
