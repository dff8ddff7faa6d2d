""" "Save a card" sessions as both sides use them: the API making one
(:mod:`tollway_account.card_setup`), the page (:mod:`tollway_account.card_page`)
reading and completing it.

A session's id is the credential of its page (:func:`tollway.billing.hosted.new_session_id`);
only its hash is stored, so a database reader cannot save a card on an account's page.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal, cast

import msgspec
from sqlalchemy import Table, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import Reads, utcnow
from tollway.billing.hosted import SESSION_ID, complete_session, id_hash, new_session_id
from tollway_account.models import CardSession

State = Literal["open", "saved", "expired"]
"""Where a session stands: usable, used (a card was saved), or past ``expires_at``."""


class OpenCardSession(msgspec.Struct, frozen=True):
    """A session as its page reads it."""

    id_hash: str
    account_id: int
    return_url: str | None
    expires_at: datetime
    completed_at: datetime | None

    def state(self, now: datetime) -> State:
        if self.completed_at is not None:
            return "saved"
        if now >= self.expires_at:
            return "expired"
        return "open"


_SESSION = select(
    CardSession.id_hash,
    CardSession.account_id,
    CardSession.return_url,
    CardSession.expires_at,
    CardSession.completed_at,
).where(CardSession.id_hash == bindparam("id_hash"))

_CLAIM = (
    select(CardSession.id_hash)
    .where(CardSession.id_hash == bindparam("id_hash"), CardSession.completed_at.is_(None))
    .with_for_update()
)

_SESSIONS = cast(Table, CardSession.__table__)


def create(
    session: AsyncSession, account_id: int, return_url: str | None, ttl: timedelta
) -> tuple[str, datetime]:
    """A new session of the account in ``session``'s transaction: its id (handed out
    once, never stored) and when it expires."""
    session_id = new_session_id()
    now = utcnow()
    expires_at = now + ttl
    session.add(
        CardSession(
            id_hash=id_hash(session_id),
            account_id=account_id,
            return_url=return_url,
            created_at=now,
            expires_at=expires_at,
        )
    )
    return session_id, expires_at


async def find(reads: Reads, session_id: str) -> OpenCardSession | None:
    """The session of ``session_id`` (any account's: the id is the credential), or
    ``None``; a string that cannot be an id is not looked up."""
    if not SESSION_ID.fullmatch(session_id):
        return None
    return await reads.first(_SESSION, OpenCardSession, id_hash=id_hash(session_id))


async def claim(session: AsyncSession, session_hash: str) -> bool:
    """Whether the session is still unused, holding it for ``session``'s transaction:
    on PostgreSQL a second request (a double click) waits for the first to commit, then
    finds it used, before it saves a card. SQLite, which has one writer, has no row
    locks: there :func:`complete` tells the second request."""
    connection = await session.connection()
    found = await connection.execute(_CLAIM, {"id_hash": session_hash})
    return found.first() is not None


async def complete(
    session: AsyncSession, session_hash: str, payment_method_id: int, now: datetime
) -> bool:
    """Mark the session used by the saved card ``payment_method_id`` in ``session``'s
    transaction; ``False`` when it was already (another request saved a card first)."""
    return await complete_session(
        session, _SESSIONS, session_hash, now, payment_method_id=payment_method_id
    )
