"""The constrained field types the point of sale's wire types share (a violation is a
400, the spec's "invalid value")."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from tollway import MAX_URL_LENGTH

OrderType = Literal["dine_in", "takeaway", "delivery", "ecommerce"]
OrderStatus = Literal["pending", "confirmed", "preparing", "ready", "delivered", "cancelled"]
GroupBy = Literal["day", "week", "month"]

MAX_CENTS = 100_000_000
"""A million units of any two-decimal currency: no price or fee above it."""
PRINTABLE = "^[^\\x00-\\x1f\\x7f]*$"
NOT_BLANK = "^[^\\x00-\\x1f\\x7f]*[^\\s\\x00-\\x1f\\x7f][^\\x00-\\x1f\\x7f]*$"

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=NOT_BLANK)]
ShortText = Annotated[str, msgspec.Meta(max_length=100, pattern=PRINTABLE)]
NO_NUL = "^[^\\x00]*$"
"""Text of several lines: anything but NUL, which PostgreSQL's text cannot hold."""
LongText = Annotated[str, msgspec.Meta(max_length=2000, pattern=NO_NUL)]
Notes = Annotated[str, msgspec.Meta(max_length=500, pattern=NO_NUL)]
Cents = Annotated[int, msgspec.Meta(ge=0, le=MAX_CENTS)]
Bps = Annotated[int, msgspec.Meta(ge=0, le=10_000)]
"""Hundredths of a percent: ``1250`` is 12.5%."""
Qty = Annotated[int, msgspec.Meta(ge=1, le=999)]
StockQty = Annotated[int, msgspec.Meta(ge=0, le=1_000_000_000)]
Color = Annotated[str, msgspec.Meta(pattern="^#[0-9A-Fa-f]{6}$")]
ImageUrl = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_URL_LENGTH)]
Tag = Annotated[str, msgspec.Meta(min_length=1, max_length=50, pattern=NOT_BLANK)]
Tags = Annotated[list[Tag], msgspec.Meta(max_length=20)]
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=24, pattern="^[a-z]+_[0-9A-Za-z]+$")]
CouponCode = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern="^[A-Za-z0-9_-]+$")]
Email = Annotated[
    str,
    msgspec.Meta(
        min_length=3,
        max_length=320,
        pattern="^[^@\\x00-\\x20\\x7f]+@[^@\\x00-\\x20\\x7f]+\\.[^@\\x00-\\x20\\x7f]+$",
    ),
]
Password = Annotated[str, msgspec.Meta(min_length=8, max_length=200)]
Phone = Annotated[str, msgspec.Meta(min_length=3, max_length=32, pattern="^\\+?[0-9 ().-]+$")]
Timestamp = Annotated[datetime, msgspec.Meta(tz=True)]
