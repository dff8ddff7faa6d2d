"""The ``idempotency_keys`` table (the core's migration ``0004_idempotency``) and the
statements run on it, built once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import (
    BindParameter,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    and_,
    bindparam,
    delete,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Mapped, mapped_column

from tollway.db import UTCDateTime, utcnow
from tollway.db.models import Account, CoreBase

PURGE_BATCH = 100
"""Expired keys deleted by each new key, at most. A key expires for each key made, so
this keeps up, and a deployment idle for days never deletes them all in one request."""


class IdempotencyKey(CoreBase):
    """A claimed key and, once its request has been answered, the answer."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("account_id", "product", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"))
    product: Mapped[str] = mapped_column(String(64))
    key: Mapped[str] = mapped_column(String(255))
    fingerprint: Mapped[str] = mapped_column(String(64))
    """SHA-256 (hex) of the request: a reused key must come with the same request."""
    lease_token: Mapped[str] = mapped_column(String(32))
    locked_until: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """``None`` while the request runs."""
    content_type: Mapped[str | None] = mapped_column(Text, nullable=True)
    location: Mapped[str | None] = mapped_column(Text, nullable=True)
    body: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Found(msgspec.Struct, frozen=True, gc=False):
    """A key's row as :data:`FIND` reads it."""

    id: int
    fingerprint: str
    lease_token: str
    locked_until: datetime
    expires_at: datetime
    status_code: int | None
    content_type: str | None
    location: str | None
    body: bytes | None


_KEYS = IdempotencyKey.__table__.c
_NOW: BindParameter[datetime] = bindparam("now")

FIND = select(*(getattr(_KEYS, name) for name in Found.__struct_fields__)).where(
    _KEYS.account_id == bindparam("account_id"),
    _KEYS.product == bindparam("product"),
    _KEYS.key == bindparam("key"),
)
"""The row of an account's key for a product."""

# SKIP LOCKED: requests purging at once share the work instead of queueing on each
# other's rows (and cannot deadlock); SQLite has one writer and ignores the clause.
PURGE = delete(IdempotencyKey).where(
    _KEYS.id.in_(
        select(_KEYS.id)
        .where(_KEYS.expires_at <= _NOW)
        .order_by(_KEYS.expires_at)
        .limit(PURGE_BATCH)
        .with_for_update(skip_locked=True)
    )
)
"""Deletes up to :data:`PURGE_BATCH` keys expired by ``now``, oldest first."""

INSERT = insert(IdempotencyKey).returning(_KEYS.id)

_LEASE: dict[str, Any] = {
    "lease_token": bindparam("token"),
    "locked_until": bindparam("until"),
    "expires_at": bindparam("expires"),
}
TAKE_OVER = (
    update(IdempotencyKey)
    .where(
        _KEYS.id == bindparam("row"),
        _KEYS.lease_token == bindparam("seen"),
        or_(
            _KEYS.expires_at <= _NOW,
            and_(_KEYS.status_code.is_(None), _KEYS.locked_until <= _NOW),
        ),
    )
    .values(
        fingerprint=bindparam("new_fingerprint"),
        status_code=None,
        content_type=None,
        location=None,
        body=None,
        **_LEASE,
    )
)
"""Claims the row ``row`` afresh if it is still as read (lease token ``seen``) and
expired or with its lease lapsed: of requests taking a key over at once, one does."""

_HELD = and_(
    _KEYS.id == bindparam("row"),
    _KEYS.lease_token == bindparam("token"),
    _KEYS.status_code.is_(None),
)
COMPLETE = (
    update(IdempotencyKey)
    .where(_HELD)
    .values(
        status_code=bindparam("status"),
        content_type=bindparam("media"),
        location=bindparam("where"),
        body=bindparam("content"),
    )
)
"""Keeps the answer of the claim ``(row, token)``, if it still holds the key."""

RELEASE = delete(IdempotencyKey).where(_HELD)
"""Frees the key of the claim ``(row, token)``, if it still holds it."""
