"""Tables of the background removal product; every row carries its account, except
the deployment's signing secret."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from tollway import Account, UTCDateTime, make_metadata


class RemoveBgBase(DeclarativeBase):
    metadata = make_metadata()


class Credits(RemoveBgBase):
    """An account's credits in one billing period: ``used`` are charged, ``reserved``
    are held by images being processed."""

    __tablename__ = "removebg_credits"
    __table_args__ = (UniqueConstraint("account_id", "period", name="uq_removebg_credits_period"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    period: Mapped[str] = mapped_column(String(7))
    """``YYYY-MM``: the UTC calendar month."""
    used: Mapped[int] = mapped_column(Integer, default=0)
    reserved: Mapped[int] = mapped_column(Integer, default=0)


class Usage(RemoveBgBase):
    """What an account was charged in one 15-minute stretch of UTC time: the usage
    report sums these by the caller's days (a billing period's :class:`Credits` say how
    much, not when). Every zone's midnight falls on a quarter hour, so no stretch
    straddles two days."""

    __tablename__ = "removebg_usage"

    account_id: Mapped[int] = mapped_column(
        ForeignKey(Account.id, ondelete="CASCADE"), primary_key=True
    )
    bucket: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    """The stretch's first instant."""
    credits: Mapped[int] = mapped_column(Integer)
    """Credits charged."""
    images: Mapped[int] = mapped_column(Integer)
    """Images processed and charged for (a failed image is given its credit back)."""


class Job(RemoveBgBase):
    __tablename__ = "removebg_jobs"
    __table_args__ = (Index("ix_removebg_jobs_status_created", "status", "created_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(20))
    total: Mapped[int] = mapped_column(Integer)
    completed: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    credits_reserved: Mapped[int] = mapped_column(Integer)
    credits_used: Mapped[int] = mapped_column(Integer, default=0)
    period: Mapped[str] = mapped_column(String(7))
    """The billing period whose credits the job reserved."""
    output_format: Mapped[str] = mapped_column(String(10))
    output_size: Mapped[str] = mapped_column(String(10))
    bg_color: Mapped[str | None] = mapped_column(String(7), nullable=True)
    base_url: Mapped[str] = mapped_column(Text)
    """Where result URLs of this job point (the submitting request's base URL)."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    """Until when the process running the job holds it (it renews while it runs)."""
    lease_token: Mapped[str | None] = mapped_column(String(32), nullable=True)


class JobItem(RemoveBgBase):
    __tablename__ = "removebg_job_items"
    __table_args__ = (
        UniqueConstraint("job_id", "position", name="uq_removebg_job_items_position"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey(Job.id, ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    reference: Mapped[str] = mapped_column(String(200))
    """The caller's id for the image, else its 1-based position."""
    url: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20))
    """``pending``, then ``completed`` or ``failed``."""
    result_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    width: Mapped[int | None] = mapped_column(Integer, nullable=True)
    height: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class Result(RemoveBgBase):
    """A processed image, served at its signed URL until ``expires_at``."""

    __tablename__ = "removebg_results"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    job_id: Mapped[str | None] = mapped_column(
        ForeignKey(Job.id, ondelete="CASCADE"), index=True, nullable=True
    )
    media_type: Mapped[str] = mapped_column(String(20))
    content: Mapped[bytes] = mapped_column(LargeBinary)
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
