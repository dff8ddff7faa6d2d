"""What the public QR routes share, one per gateway: the blocklist and the image
cache. Admission (tiers and windows) is declared in :mod:`tollway_qr.admission`."""

from __future__ import annotations

from tollway import Gateway, UnavailableForLegalReasons
from tollway_qr.blocklist import Blocklist
from tollway_qr.cache import CacheKey, RenderCache, cache_key, etag_of
from tollway_qr.settings import QrSettings
from tollway_render import QrRequest, RenderedImage, render_qr

_BLOCKED_HELP = (
    "QR codes pointing at known phishing or malware sites are not generated. "
    "If you believe this is a mistake, contact the operator of this service."
)


class QrService:
    """The blocklist and the image cache of one gateway."""

    def __init__(self, gateway: Gateway) -> None:
        settings = gateway.product_settings(QrSettings)
        self.blocklist = Blocklist.load(
            settings.blocklists, include_default=settings.default_blocklist
        )
        self.cache = RenderCache(settings.cache_bytes)

    def refuse_blocked(self, data: str) -> None:
        match = self.blocklist.check(data)
        if match is not None:
            raise UnavailableForLegalReasons(
                "This content cannot be encoded",
                extra={"reason": match.reason, "help": _BLOCKED_HELP},
            )

    def identify(self, request: QrRequest) -> tuple[CacheKey, str]:
        """The image's cache key and ETag, refusing blocked content (451) first.

        Cheap: a conditional request that matches is answered without rendering.
        """
        key = cache_key(request)
        # A cached image passed the (immutable) blocklist when it was rendered.
        if self.cache.get(key, count=False) is None:
            self.refuse_blocked(request.data)
        return key, etag_of(key)

    def render(self, request: QrRequest, key: CacheKey) -> RenderedImage:
        """The image from the cache, or rendered (``RenderError``, a 400, when the data
        does not fit)."""
        image = self.cache.get(key)
        if image is None:
            image = render_qr(request)
            self.cache.put(key, image)
        return image
