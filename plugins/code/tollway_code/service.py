"""What the code product's routes do beyond rendering one image: the batch of QR codes
and the catalog of code types. Rendering itself is ``tollway_render``'s."""

from __future__ import annotations

from collections.abc import Callable

from tollway_code.schemas import (
    BatchQrRequest,
    BatchQrResponse,
    BatchQrResult,
    CodeType,
    QrRequest,
)
from tollway_render import LINEAR_TYPES, RenderError, data_url, render_qr

__all__ = ["CODE_TYPES", "render_batch"]

CODE_TYPES: tuple[CodeType, ...] = (
    CodeType(
        id="qr",
        name="QR Code",
        kind="2d",
        endpoint="/v1/code/qr",
        output_formats=["png", "svg"],
        description="2D matrix code for URLs and any Unicode text up to 2048 characters, "
        "with error correction level L, M, Q or H.",
        example="https://example.com",
    ),
    *(
        CodeType(
            id=linear.id,
            name=linear.name,
            kind="linear",
            endpoint="/v1/code/barcode",
            output_formats=["png"],
            description=linear.description,
            example=linear.example,
        )
        for linear in LINEAR_TYPES
    ),
)
"""The ``GET /v1/code/types`` catalog: the QR code, then every linear symbology."""


def _batch_ids(request: BatchQrRequest) -> list[str]:
    """Each item's ``id``, or its 1-based position (``"1"``, ``"2"``, ...) when it has none.

    Raises :class:`RenderError` when two items would share one, so that every result can be
    told apart by its ``id`` (a caller's ``"1"`` on item 2 collides with item 1's position).
    """
    ids = [item.id if item.id is not None else str(n) for n, item in enumerate(request.items, 1)]
    first: dict[str, int] = {}
    for position, item_id in enumerate(ids, start=1):
        if item_id in first:
            raise RenderError(
                "Invalid request body: item ids must be unique within a batch; "
                f"{item_id!r} is the id of items {first[item_id]} and {position}"
            )
        first[item_id] = position
    return ids


def render_batch(request: BatchQrRequest, content: Callable[[str], str] = str) -> BatchQrResponse:
    """Render every item with the shared options; any failure fails the whole batch.

    Each item encodes ``content(item.data)`` (:class:`tollway_code.content.QrContent`);
    results carry the ids of :func:`_batch_ids`, in request order, and the data given.
    """
    results: list[BatchQrResult] = []
    ids = _batch_ids(request)
    for position, (item_id, item) in enumerate(zip(ids, request.items, strict=True), start=1):
        # Built, not decoded: the batch's fields were validated as the batch's.
        qr = QrRequest(
            content(item.data),
            request.format,
            request.size,
            request.ecc,
            request.margin,
            request.dark,
            request.light,
        )
        try:
            image = render_qr(qr)
        except RenderError as error:
            raise RenderError(f"item {position} (id {item_id!r}): {error}") from None
        results.append(
            BatchQrResult(
                id=item_id,
                data=item.data,
                format=request.format,
                width=image.width,
                height=image.height,
                data_url=data_url(image),
            )
        )
    return BatchQrResponse(data=results, total=len(results))
