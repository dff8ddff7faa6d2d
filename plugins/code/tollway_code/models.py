"""The code product's one table: how many codes each account generated when."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from tollway import Account, UTCDateTime, make_metadata


class CodeBase(DeclarativeBase):
    metadata = make_metadata()


class Generated(CodeBase):
    """The codes an account generated in one 15-minute stretch of UTC time: the usage
    report sums these by the caller's days. Every zone's midnight falls on a quarter
    hour, so no stretch straddles two days."""

    __tablename__ = "code_generated"

    account_id: Mapped[int] = mapped_column(
        ForeignKey(Account.id, ondelete="CASCADE"), primary_key=True
    )
    bucket: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    """The stretch's first instant."""
    qr: Mapped[int] = mapped_column(Integer)
    """QR codes, one per item of a batch."""
    barcodes: Mapped[int] = mapped_column(Integer)
    """Linear barcodes."""
