"""Rendered images kept in process memory, bounded by bytes, least recently used first.

An image's ETag is a digest of the request's normalised parameters, so a conditional
request is answered (304) without rendering, and identical requests share one entry.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

from tollway_render import QrRequest, RenderedImage

CacheKey = tuple[str, str, int, str, int, str, str]


def cache_key(request: QrRequest) -> CacheKey:
    """The parameters that decide the image, with colours in one spelling."""
    return (
        request.data,
        request.format,
        request.size,
        request.ecc,
        request.margin,
        request.dark.removeprefix("#").lower(),
        request.light.removeprefix("#").lower(),
    )


def etag_of(key: CacheKey) -> str:
    """A strong ETag: the same parameters always give the same bytes."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=16).hexdigest()
    return f'"{digest}"'


class RenderCache:
    """An LRU of rendered images holding at most ``max_bytes`` of image data."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.hits = 0
        self.misses = 0
        self._images: OrderedDict[CacheKey, RenderedImage] = OrderedDict()

    def get(self, key: CacheKey, *, count: bool = True) -> RenderedImage | None:
        """The image, or ``None``; ``count=False`` peeks without touching the
        statistics or the recency order."""
        image = self._images.get(key)
        if not count:
            return image
        if image is None:
            self.misses += 1
        else:
            self.hits += 1
            self._images.move_to_end(key)
        return image

    def put(self, key: CacheKey, image: RenderedImage) -> None:
        if len(image.content) > self.max_bytes or key in self._images:
            return
        self._images[key] = image
        self.size += len(image.content)
        while self.size > self.max_bytes:
            _, evicted = self._images.popitem(last=False)
            self.size -= len(evicted.content)

    def __len__(self) -> int:
        return len(self._images)
