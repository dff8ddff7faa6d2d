"""Wire types (msgspec Structs) of the background removal product.

Request structs forbid unknown fields; optional fields are ``UNSET`` when absent, so
an explicit ``null`` is refused rather than read as "absent". Rules the schema does
not carry (exactly one image source, valid base64, a fetchable URL) are checked by
``tollway_removebg.service``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from tollway_removebg.images import OutputFormat, OutputSize

__all__ = [
    "BatchCreate",
    "BatchImage",
    "BatchItem",
    "BatchJob",
    "BatchSubmitted",
    "ProcessRequest",
    "ProcessedImage",
    "Quota",
]

MAX_BATCH = 100
JobStatus = Literal["processing", "completed", "failed"]
ItemStatus = Literal["processing", "completed", "failed"]
Url = Annotated[str, msgspec.Meta(min_length=1, max_length=2048)]
Colour = Annotated[str, msgspec.Meta(min_length=3, max_length=7)]


class ProcessRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/removebg/process``: exactly one of ``image_url`` and
    ``image_base64``."""

    image_url: Url | msgspec.UnsetType = msgspec.UNSET
    image_base64: str | msgspec.UnsetType = msgspec.UNSET
    return_base64: bool = False
    output_format: OutputFormat = "png"
    output_size: OutputSize = "full"
    bg_color: Colour | msgspec.UnsetType = msgspec.UNSET


class ProcessedImage(msgspec.Struct, kw_only=True):
    id: str
    result_url: str | None
    result_base64: str | None
    width: int
    height: int
    credits_used: int
    expires_at: datetime | None
    """``None`` for inline results (``return_base64``): nothing is kept."""


class BatchImage(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    url: Url
    id: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | msgspec.UnsetType = (
        msgspec.UNSET
    )


class BatchCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/removebg/batch``."""

    images: Annotated[list[BatchImage], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]
    output_format: OutputFormat = "png"
    output_size: OutputSize = "full"
    bg_color: Colour | msgspec.UnsetType = msgspec.UNSET


class BatchSubmitted(msgspec.Struct, kw_only=True):
    job_id: str
    status: JobStatus
    total: int
    completed: int
    failed: int
    credits_reserved: int
    created_at: datetime


class BatchItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One image of a job; the fields of the other outcome are left out."""

    id: str
    status: ItemStatus
    result_url: str | None = None
    width: int | None = None
    height: int | None = None
    expires_at: datetime | None = None
    error: str | None = None


class BatchJob(msgspec.Struct, kw_only=True):
    job_id: str
    status: JobStatus
    total: int
    completed: int
    failed: int
    credits_reserved: int
    credits_used: int
    created_at: datetime
    items: list[BatchItem]


class Quota(msgspec.Struct, kw_only=True):
    plan: str
    credits_total: int
    credits_used: int
    credits_reserved: int
    """Held by images being processed: neither used nor available."""
    credits_remaining: int
    resets_at: datetime
