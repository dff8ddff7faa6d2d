"""The analytics product's one table: exports, with their files until they expire.

The analytics product owns no product data; an export keeps the file it rendered
(a few kilobytes: buckets, not rows) so that any process of the deployment can serve
its download URL for the hour it is valid.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from tollway import Account, UTCDateTime, make_metadata


class AnalyticsBase(DeclarativeBase):
    metadata = make_metadata()


class Export(AnalyticsBase):
    __tablename__ = "analytics_exports"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    """``exp_`` and 32 hex digits."""
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"))
    report_id: Mapped[str] = mapped_column(String(100))
    format: Mapped[str] = mapped_column(String(8))
    status: Mapped[str] = mapped_column(String(16))
    """``pending`` (a job makes it), ``ready`` or ``failed``."""
    start_date: Mapped[str] = mapped_column(String(10))
    end_date: Mapped[str] = mapped_column(String(10))
    granularity: Mapped[str] = mapped_column(String(8))
    tz: Mapped[str] = mapped_column(String(64))
    content: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    file_size_bytes: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    """When the download URL stops working: an hour after the file was made."""

    __table_args__ = (
        Index("ix_analytics_exports_account_created", "account_id", "created_at"),
        Index("ix_analytics_exports_expires", "expires_at"),
    )
