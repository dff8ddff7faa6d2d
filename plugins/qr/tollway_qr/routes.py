"""HTTP handlers of the public QR API: ``GET``/``HEAD /api/qr`` and ``POST /api/qr/json``.

Admission (tiers and limits, :mod:`tollway_qr.admission`) runs before each handler;
the handlers validate, filter, and render through the gateway's :class:`QrService`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from litestar import Request, Response, post, route
from litestar.di import NamedDependency
from litestar.params import FromQuery, JSONBody, QueryParameter

from tollway import etag_matches
from tollway_qr import admission
from tollway_qr.schemas import QrJsonRequest, QrJsonResponse, QrMeta
from tollway_qr.service import QrService
from tollway_render import HEX_COLOR_PATTERN, Ecc, QrFormat, QrRequest, data_url

IMAGE_CACHE_CONTROL = "public, max-age=3600"


@route(
    "/",
    http_method=["GET", "HEAD"],
    access=admission.IMAGE,
    media_type="image/png",
    sync_to_thread=False,
)
def qr_image(
    request: Request[Any, Any, Any],
    qr_service: NamedDependency[QrService],
    content: Annotated[str, QueryParameter(name="data", min_length=1, max_length=2048)],
    size: Annotated[int, QueryParameter(ge=50, le=1000)] = 200,
    format: FromQuery[QrFormat] = "png",
    dark: Annotated[str, QueryParameter(pattern=HEX_COLOR_PATTERN)] = "000000",
    light: Annotated[str, QueryParameter(pattern=HEX_COLOR_PATTERN)] = "ffffff",
    margin: Annotated[int, QueryParameter(ge=0, le=10)] = 2,
    ecc: FromQuery[Ecc] = "M",
    api_key: Annotated[str | None, QueryParameter(max_length=200)] = None,
) -> Response[bytes]:
    """The QR code as image bytes, cacheable for an hour; ``HEAD`` answers the same
    without the bytes (CDNs check freshness and size with it)."""
    service = qr_service
    qr = QrRequest(content, format, size, ecc, margin, dark, light)
    key, etag = service.identify(qr)
    headers = {"ETag": etag, "Cache-Control": IMAGE_CACHE_CONTROL}
    if etag_matches(request.headers.get("if-none-match"), etag):
        return Response(b"", status_code=304, headers=headers)
    image = service.render(qr, key)
    if request.method == "HEAD":
        headers["Content-Length"] = str(len(image.content))
        return Response(b"", media_type=image.media_type, headers=headers)
    return Response(image.content, media_type=image.media_type, headers=headers)


@post("/json", access=admission.JSON, status_code=200, sync_to_thread=False)
def qr_json(
    data: JSONBody[QrJsonRequest], qr_service: NamedDependency[QrService]
) -> Response[QrJsonResponse]:
    """The QR code as a data URL with its parameters; never cached."""
    service = qr_service
    qr = QrRequest(data.data, data.format, data.size, data.ecc, data.margin, data.dark, data.light)
    key, _ = service.identify(qr)
    image = service.render(qr, key)
    meta = QrMeta(
        data=data.data,
        size=data.size,
        dark="#" + data.dark.removeprefix("#").lower(),
        light="#" + data.light.removeprefix("#").lower(),
        ecc=data.ecc,
        margin=data.margin,
        generatedAt=datetime.now(UTC).isoformat().replace("+00:00", "Z"),
    )
    body = QrJsonResponse(
        success=True,
        format=data.format,
        width=image.width,
        height=image.height,
        dataUrl=data_url(image),
        meta=meta,
        svg=image.content.decode() if data.format == "svg" else None,
    )
    return Response(body, headers={"Cache-Control": "no-store"})


ROUTES = [qr_image, qr_json]
