"""Tables of the account and billing product.

Subscriptions, invoices and saved cards are not here: they are the billing engine's
(:mod:`tollway.billing`), on the core's ``platform`` ledger, with the account itself
as the engine's customer.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from tollway import Account, UTCDateTime, make_metadata, utcnow


class AccountBase(DeclarativeBase):
    metadata = make_metadata()


class CardSession(AccountBase):
    """A "Save a card" page's session: one account saving one card.

    The URL's session id is the credential; only its SHA-256 is stored (like an API
    key's), so a database reader cannot save a card on an account's page."""

    __tablename__ = "account_card_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    return_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    """Where the page sends the browser once the card is saved; ``None``: it says so
    itself."""
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    payment_method_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """The engine's saved card the page made."""
