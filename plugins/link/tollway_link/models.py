"""Tables of the short links product; every row carries the account it belongs to.

A link has a public string id (``lnk_...``, what the API shows) and an integer key the
click rows point at: a million clicks index a 4-byte key, not a string. Clicks are
written in batches off the request path (:mod:`tollway_link.clicks`); each carries the
id its redirect gave it, so a batch written twice stores each click once.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from tollway import Account, UTCDateTime, make_metadata, utcnow


class LinkBase(DeclarativeBase):
    metadata = make_metadata()


class Link(LinkBase):
    __tablename__ = "link_links"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    public_id: Mapped[str] = mapped_column(String(32), unique=True)
    """The API's ``id``: ``lnk_`` and 16 random base-62 characters."""
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    code: Mapped[str] = mapped_column(String(64), unique=True)
    """Case-sensitive; one namespace for the whole deployment (the redirect host's)."""
    destination_url: Mapped[str] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(String(200), nullable=True)
    tags: Mapped[list[str]] = mapped_column(JSON, default=list)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    expired_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    max_clicks: Mapped[int | None] = mapped_column(Integer, nullable=True)
    clicks: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """Counted clicks (bots excluded), kept in the transaction that stores them."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Click(LinkBase):
    __tablename__ = "link_clicks"
    __table_args__ = (Index("ix_link_clicks_link_time", "link_id", "clicked_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    """Given by the redirect (time first, then random; 32 hex characters): storing the
    same click twice is a no-op."""
    link_id: Mapped[int] = mapped_column(ForeignKey(Link.id, ondelete="CASCADE"))
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    clicked_at: Mapped[datetime] = mapped_column(UTCDateTime)
    referrer: Mapped[str] = mapped_column(String(255))
    """``(direct)``, ``(qr)`` or the Referer's registrable domain."""
    country: Mapped[str] = mapped_column(String(2))
    """ISO 3166-1 alpha-2; ``XX`` for private and unknown addresses."""
    device: Mapped[str] = mapped_column(String(8))
    """``mobile``, ``desktop`` or ``tablet``."""
    visitor: Mapped[str] = mapped_column(String(32))
    """Keyed HMAC of (client address, user agent), hex; the address is never stored."""
    bot: Mapped[bool] = mapped_column(Boolean, default=False)


# Pre-aggregates ----------------------------------------------------------------------
#
# Written in the transaction that stores the clicks (tollway_link.store), read by the
# analytics (tollway_link.analytics): a link's answer reads rows per 15 minutes, per UTC
# day and per distinct value, never its clicks one by one. Time is counted in 15-minute
# UTC buckets (``bucket`` = epoch seconds // 900): every time zone's midnight falls on
# one (offsets of :30 and :45 included). Rows go with their link (``CASCADE``), and
# with it with its account.


class Traffic(LinkBase):
    """Clicks of a link per 15-minute bucket: the clicks of each day, in any zone."""

    __tablename__ = "link_traffic"

    link_id: Mapped[int] = mapped_column(ForeignKey(Link.id, ondelete="CASCADE"), primary_key=True)
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    clicks: Mapped[int] = mapped_column(Integer)


class Breakdown(LinkBase):
    """Clicks of a link per referrer, country and device, per 15-minute bucket
    (``buckets`` 1) and per UTC day (``buckets`` 96, ``bucket`` its first): a period
    sums its whole UTC days and the 15-minute rows of its two partial ones."""

    __tablename__ = "link_breakdown"

    link_id: Mapped[int] = mapped_column(ForeignKey(Link.id, ondelete="CASCADE"), primary_key=True)
    buckets: Mapped[int] = mapped_column(Integer, primary_key=True)
    """How many 15-minute buckets the row covers: 1 or 96."""
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True)
    dimension: Mapped[str] = mapped_column(String(8), primary_key=True)
    """``referrer``, ``country`` or ``device``."""
    value: Mapped[str] = mapped_column(String(255), primary_key=True)
    bot: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    clicks: Mapped[int] = mapped_column(Integer)


class Visit(LinkBase):
    """The 15-minute buckets in which a visitor clicked a link: what the visitor
    counts below are kept from (never read by the analytics)."""

    __tablename__ = "link_visits"

    link_id: Mapped[int] = mapped_column(ForeignKey(Link.id, ondelete="CASCADE"), primary_key=True)
    visitor: Mapped[str] = mapped_column(String(32), primary_key=True)
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot: Mapped[bool] = mapped_column(Boolean)
    """Every click of the visitor in the bucket so far is a bot's (or a ``HEAD``): the
    bucket counts only with ``include_bots``."""


class VisitGaps(LinkBase):
    """A link's visits (a visitor's 15-minute buckets) by their ``gap``: how many buckets
    after the visitor's previous visit each came, at most :data:`~tollway_link.store.
    LONGEST_DAY` (also for a first visit). Counted twice: over every visit
    (``include_bots``) and over the visits with a person's click.

    The visitors of any stretch of buckets ``s`` to ``e`` no longer than ``LONGEST_DAY``
    (a day of any zone) are its visits with ``gap > bucket - s``: each visitor's first
    visit in the stretch, and no other. A new visit changes at most two rows (its own,
    and the next visit's gap), however many zones' days it falls in."""

    __tablename__ = "link_visit_gaps"

    link_id: Mapped[int] = mapped_column(ForeignKey(Link.id, ondelete="CASCADE"), primary_key=True)
    include_bots: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True)
    gap: Mapped[int] = mapped_column(Integer, primary_key=True)
    visitors: Mapped[int] = mapped_column(Integer)


class VisitorBounds(LinkBase):
    """Visitors of a link by the bucket of their first click and of their latest: those
    who clicked in buckets ``a`` to ``b`` are those whose latest click is at ``a`` or
    later, less those whose first is at ``b`` or later."""

    __tablename__ = "link_visitor_bounds"

    link_id: Mapped[int] = mapped_column(ForeignKey(Link.id, ondelete="CASCADE"), primary_key=True)
    include_bots: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    bound: Mapped[str] = mapped_column(String(5), primary_key=True)
    """``first`` or ``last``."""
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True)
    visitors: Mapped[int] = mapped_column(Integer)
