"""A hosted card page's session: the id in its URL, and completing it once.

A session's id is its URL's last segment and the only credential of its page
(``secrets.token_urlsafe(32)``: 43 characters, 256 bits); a product's table stores
only its SHA-256 (``id_hash``), so nobody reading the database can use a visitor's
page, and a path that cannot be an id is answered without a lookup.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import Table, update
from sqlalchemy.ext.asyncio import AsyncSession

SESSION_ID = re.compile(r"[A-Za-z0-9_-]{43}")
"""What :func:`new_session_id` makes (``fullmatch``)."""


def new_session_id() -> str:
    return secrets.token_urlsafe(32)


def id_hash(session_id: str) -> str:
    """What a session's table keeps of its id."""
    return hashlib.sha256(session_id.encode()).hexdigest()


async def complete_session(
    session: AsyncSession, table: Table, session_hash: str, now: datetime, **values: Any
) -> bool:
    """Mark the session ``session_hash`` of ``table`` (with ``id_hash`` and
    ``completed_at`` columns) completed at ``now`` with ``values``, in ``session``'s
    transaction; ``False`` when it was already (another request completed it first)."""
    statement = (
        update(table)
        .where(table.c.id_hash == session_hash, table.c.completed_at.is_(None))
        .values(completed_at=now, **values)
    )
    connection = await session.connection()
    result = await connection.execute(statement)
    return bool(result.rowcount == 1)
