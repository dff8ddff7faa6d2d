"""What the local card processor keeps: saved cards and charges, in the core's tables.

These rows stand for the records an outside processor keeps on its own servers; the
gateway's billing tables only hold their tokens and ids. A saved card keeps what a
processor may show back (brand, last four digits, expiry) and how its charges go
(``behaviour``, read from the test number when it was saved), never the number or
the security code.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from tollway.db.base import UTCDateTime, utcnow
from tollway.db.models import CoreBase

TOKEN_LENGTH = 40
"""Room for ``card_`` / ``ch_`` and 24 random characters, with some to spare."""


class ProcessorCard(CoreBase):
    __tablename__ = "processor_cards"

    token: Mapped[str] = mapped_column(String(TOKEN_LENGTH), primary_key=True)
    brand: Mapped[str] = mapped_column(String(16))
    last4: Mapped[str] = mapped_column(String(4))
    exp_month: Mapped[int] = mapped_column(Integer)
    exp_year: Mapped[int] = mapped_column(Integer)
    behaviour: Mapped[str] = mapped_column(String(32))
    """``approve``, or the decline code every charge of the card gets."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    forgotten_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class ProcessorCharge(CoreBase):
    __tablename__ = "processor_charges"

    id: Mapped[str] = mapped_column(String(TOKEN_LENGTH), primary_key=True)
    idempotency_key: Mapped[str] = mapped_column(String(255), unique=True)
    card_token: Mapped[str] = mapped_column(
        String(TOKEN_LENGTH), ForeignKey("processor_cards.token")
    )
    amount_cents: Mapped[int] = mapped_column(Integer)
    currency: Mapped[str] = mapped_column(String(3))
    status: Mapped[str] = mapped_column(String(16))
    failure_code: Mapped[str | None] = mapped_column(String(32), nullable=True)
    failure_message: Mapped[str | None] = mapped_column(String(200), nullable=True)
    refunded_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
