"""The short links product's wire types (msgspec Structs), as contracts/link.yaml says.

Request structs forbid unknown fields and carry what a schema can say as
``msgspec.Meta`` (a violation is a 400); the rules it cannot say (a destination is an
absolute http(s) URL, a code is not reserved, nor taken) are checked by
:mod:`tollway_link.urls`, :mod:`tollway_link.codes` and the service (422, 409).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from tollway import MAX_ROW_ID, MAX_URL_LENGTH

Period = Literal["7d", "30d", "90d", "all"]

Url = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_URL_LENGTH)]
"""An absolute http(s) URL once :func:`tollway_link.urls.web_url` has checked it."""
Code = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern="^[A-Za-z0-9_-]+$")]
"""The path segment of a short URL: case-sensitive, one namespace for the deployment."""
Title = Annotated[str, msgspec.Meta(max_length=200, pattern="^[^\\x00-\\x1f\\x7f]*$")]
Tag = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=50,
        pattern="^[^\\x00-\\x1f\\x7f]*[^\\s\\x00-\\x1f\\x7f][^\\x00-\\x1f\\x7f]*$",
    ),
]
"""Not blank (a tag is stored without surrounding whitespace) and no control characters."""
Tags = Annotated[list[Tag], msgspec.Meta(max_length=20)]
"""Repeated tags are kept once, in the order first given."""
Timestamp = Annotated[datetime, msgspec.Meta(tz=True)]
"""With its offset: a time without one could be any of 26 hours."""
MaxClicks = Annotated[int, msgspec.Meta(ge=1, le=MAX_ROW_ID)]


class Link(msgspec.Struct, frozen=True, gc=False):
    """A short link as the API shows it (and its webhook events carry it)."""

    id: str
    code: str
    short_url: str
    destination_url: str
    title: str | None
    tags: list[str]
    expires_at: datetime | None
    expired_url: str | None
    """Where the link sends visitors once expired or used up; ``None``: 410."""
    max_clicks: int | None
    clicks: int
    """Counted clicks (bots and ``HEAD`` excluded), as stored so far."""
    created_at: datetime
    updated_at: datetime


class LinkCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``POST /v1/link/links``."""

    destination_url: Url
    code: Code | None = None
    """``None``: seven random base-62 characters."""
    title: Title | None = None
    tags: Tags = msgspec.field(default_factory=list)
    expires_at: Timestamp | None = None
    expired_url: Url | None = None
    max_clicks: MaxClicks | None = None


class LinkUpdate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Body of ``PATCH /v1/link/links/{link_id}``: only the given fields change;
    ``null`` clears an optional one."""

    destination_url: Url | msgspec.UnsetType = msgspec.UNSET
    code: Code | msgspec.UnsetType = msgspec.UNSET
    """A new code frees the old one at once: its short URL stops working."""
    title: Title | msgspec.UnsetType | None = msgspec.UNSET
    tags: Tags | msgspec.UnsetType = msgspec.UNSET
    expires_at: Timestamp | msgspec.UnsetType | None = msgspec.UNSET
    expired_url: Url | msgspec.UnsetType | None = msgspec.UNSET
    max_clicks: MaxClicks | msgspec.UnsetType | None = msgspec.UNSET


class DayClicks(msgspec.Struct, frozen=True, gc=False):
    date: str
    """``YYYY-MM-DD`` in the caller's ``tz``."""
    clicks: int
    unique: int


class ReferrerClicks(msgspec.Struct, frozen=True, gc=False):
    referrer: str
    clicks: int


class CountryClicks(msgspec.Struct, frozen=True, gc=False):
    country: str
    country_name: str
    clicks: int


class Devices(msgspec.Struct, frozen=True, gc=False):
    mobile: int
    desktop: int
    tablet: int


class ClickAnalytics(msgspec.Struct, frozen=True):
    """``GET /v1/link/analytics/{id}`` (spec 2.7)."""

    link_id: str
    short_url: str
    period: Period
    total_clicks: int
    unique_visitors: int
    clicks_by_day: list[DayClicks]
    """Newest first, one row for every day of the period (zeros included)."""
    top_referrers: list[ReferrerClicks]
    top_countries: list[CountryClicks]
    devices: Devices
