"""Processed images: kept in the database, served at signed, expiring URLs.

A result URL is ``<base>/v1/removebg/results/<id>.<expires>.<signature>``: ``id`` is
128 random bits, ``expires`` the epoch second the URL stops working and
``signature`` an HMAC-SHA256 of both under the deployment's result secret. The
download route needs no API key (the URL is the credential), answers 404 to
anything not signed by this deployment and 410 once the result has expired.
Expired rows are deleted at start-up and, at most every ten minutes, after storing.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import bindparam, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import ApiError, Reads, signature
from tollway_removebg.images import Rendered
from tollway_removebg.models import Result

SECRET_NAME = "removebg.result_url"
RESULTS_PATH = "/v1/removebg/results/"
PURGE_INTERVAL = timedelta(minutes=10)


class ResultGone(ApiError):
    """A result URL that worked once and has expired (or its result was deleted)."""

    status_code = 410

    def __init__(self, ttl: int) -> None:
        super().__init__(f"This result has expired: results are kept {ttl} seconds")


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"


@dataclass(frozen=True, slots=True)
class Signer:
    secret: bytes

    def _signature(self, result_id: str, expires: int) -> str:
        return signature(self.secret, result_id, expires)

    def url(self, base_url: str, result_id: str, expires_at: datetime) -> str:
        expires = int(expires_at.timestamp())
        token = f"{result_id}.{expires}.{self._signature(result_id, expires)}"
        return f"{base_url.rstrip('/')}{RESULTS_PATH}{token}"

    def verify(self, token: str) -> Signed | None:
        """What a genuine ``token`` names; ``None`` if it is not one of ours."""
        parts = token.split(".")
        if len(parts) != 3 or not parts[1].isdigit() or len(parts[1]) > 12:
            return None
        result_id, expires, signature = parts[0], int(parts[1]), parts[2]
        if not hmac.compare_digest(signature, self._signature(result_id, expires)):
            return None
        return Signed(result_id, expires)


@dataclass(frozen=True, slots=True)
class Signed:
    """The result a genuine result URL names, and the epoch second it stops working."""

    result_id: str
    expires: int

    def expired(self, now: datetime) -> bool:
        return now.timestamp() >= self.expires


def stored_result(
    rendered: Rendered,
    *,
    account_id: int,
    now: datetime,
    ttl: int,
    job_id: str | None = None,
) -> Result:
    return Result(
        id=new_id("img"),
        account_id=account_id,
        job_id=job_id,
        media_type=rendered.media_type,
        content=rendered.content,
        width=rendered.width,
        height=rendered.height,
        created_at=now,
        expires_at=now + timedelta(seconds=ttl),
    )


@dataclass(frozen=True, slots=True)
class Download:
    """A stored result as its URL serves it."""

    media_type: str
    content: bytes
    expires_at: datetime


DOWNLOAD = select(Result.media_type, Result.content, Result.expires_at).where(
    Result.id == bindparam("id")
)


async def load(reads: Reads, result_id: str, now: datetime) -> Download | None:
    """The result ``result_id``, read without a transaction; ``None`` if it expired or
    was purged."""
    result = await reads.first(DOWNLOAD, Download, id=result_id)
    if result is None or result.expires_at <= now:
        return None
    return result


async def purge(session: AsyncSession, now: datetime) -> int:
    outcome = await session.execute(delete(Result).where(Result.expires_at <= now))
    return int(outcome.rowcount)  # type: ignore[attr-defined]


def seconds_left(expires_at: datetime, now: datetime) -> int:
    return max(0, int((expires_at.astimezone(UTC) - now).total_seconds()))
