"""Claiming a key, keeping its answer, replaying it.

A key is claimed by a row committed before the handler runs, holding a lease (a token
and an expiry). Every later write of the claim (its answer, or freeing the key) only
matches while the row still holds that token, so a request whose lease lapsed and was
taken over cannot overwrite what its successor does. (The outbox's leases are for due
work found by polling; a key is found by its unique name, so the claim is an insert.)
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from litestar import Response
from litestar.enums import MediaType
from litestar.handlers import HTTPRouteHandler
from litestar.serialization import get_serializer
from litestar.types import HTTPScope, Message
from litestar.utils.helpers import get_enum_string_value
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from tollway.admission.customers import HEADER as CUSTOMER_HEADER
from tollway.db import Database, utcnow
from tollway.errors import BadRequest, Conflict
from tollway.idempotency.models import COMPLETE, FIND, INSERT, PURGE, RELEASE, TAKE_OVER, Found

log = logging.getLogger("tollway.idempotency")

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
LEASE = timedelta(seconds=60)
"""How long a claim holds its key. A request running longer may see a retry take the
key over and run beside it: a handler writing in the request's transaction still
commits once (its answer's store checks the lease), one committing on its own may run
twice. A minute is far beyond any creating POST, and bounds how long a key stays
refused (409) after the process serving it died."""
BAD_KEY = f"{HEADER} must be 1 to 255 printable ASCII characters"
REUSED = (
    f"This {HEADER} was already used with a different request; send a new key for a new request"
)
IN_PROGRESS = f"A request with this {HEADER} is in progress; retry once it has completed"

_ATTEMPTS = 3
"""Claims tried in a row when other requests change the key in between."""
_KEY = re.compile(rb"[\x20-\x7e]{1,255}")
_KEY_HEADER = HEADER.lower().encode()
_CUSTOMER_HEADER = CUSTOMER_HEADER.lower().encode()


@dataclass(frozen=True, slots=True)
class Answer:
    """What a request was answered, as kept for its key."""

    status: int
    content_type: str | None
    location: str | None
    body: bytes

    @classmethod
    def rendered(cls, response: Response[Any], handler: HTTPRouteHandler) -> Answer:
        """``response`` as Litestar is about to send it. Its content is replaced by the
        rendered bytes, which Litestar then sends as they are: rendered once."""
        media_type = get_enum_string_value(
            response.media_type or handler.media_type or MediaType.JSON
        )
        encoders = {**handler.resolve_type_encoders(), **response.response_type_encoders}
        body = response.render(response.content, media_type, get_serializer(encoders))
        response.content = body
        status = response.status_code or handler.status_code
        location = next(
            (str(value) for name, value in response.headers.items() if name.lower() == "location"),
            None,
        )
        if not _has_body(status):
            return cls(status, None, location, b"")
        text = media_type.startswith("text/")
        content_type = f"{media_type}; charset={response.encoding}" if text else media_type
        return cls(status, content_type, location, body)

    @classmethod
    def sent(cls, messages: Sequence[Message]) -> Answer:
        """The answer in the ASGI messages a route sent."""
        start: dict[str, Any] = dict(messages[0])
        found: dict[bytes, str] = {}
        for name, value in start.get("headers", ()):
            if (lowered := name.lower()) in (b"content-type", b"location"):
                found[lowered] = value.decode("latin-1")
        body = b"".join(
            bytes(message.get("body", b""))
            for message in messages
            if message["type"] == "http.response.body"
        )
        return cls(start["status"], found.get(b"content-type"), found.get(b"location"), body)

    def replay(self) -> Response[bytes]:
        headers = {REPLAYED_HEADER.lower(): "true"}
        if self.content_type is not None:
            headers["content-type"] = self.content_type
        if self.location is not None:
            headers["location"] = self.location
        return Response(self.body, status_code=self.status, headers=headers)


def _has_body(status: int) -> bool:
    return status >= 200 and status not in (204, 304)


class Claim:
    """A key claimed by the request being served, until its answer is settled."""

    __slots__ = ("answer", "database", "handler", "row", "settled", "token")

    def __init__(self, database: Database, row: int, token: str, handler: HTTPRouteHandler):
        self.database = database
        self.row = row
        self.token = token
        self.handler = handler
        self.answer: Answer | None = None
        """The handler's answer, kept by the ``after_request`` hook for its transaction."""
        self.settled = False
        """The answer is stored or the key freed: the answer may go out."""

    async def store_in(self, session: AsyncSession) -> bool:
        """Store the handler's answer in its transaction, before the commit; ``False``
        when there is none to store there (an error, a 5xx, an answer Litestar did not
        make from a ``Response``). Another request holding the key now (the lease
        lapsed) makes this a 409, and the handler's writes are rolled back."""
        answer = self.answer
        if answer is None or answer.status >= 500:
            return False
        if not await self._complete(await session.connection(), answer):
            raise Conflict(IN_PROGRESS)
        return True

    async def settle(self, messages: Sequence[Message]) -> None:
        """Keep the answer in ``messages`` (under 500) or free the key (5xx), in a
        transaction of its own, before the answer is sent."""
        self.settled = True
        answer = Answer.sent(messages)
        try:
            async with self.database.transaction() as session:
                connection = await session.connection()
                if answer.status >= 500:
                    await connection.execute(RELEASE, {"row": self.row, "token": self.token})
                else:
                    await self._complete(connection, answer)
        except Exception:
            # The answer stands: its effects, if any, happened. The key stays claimed
            # until its lease lapses, then a retry runs again.
            log.warning("%s: the answer could not be kept", HEADER, exc_info=True)

    async def _complete(self, connection: AsyncConnection, answer: Answer) -> bool:
        result = await connection.execute(
            COMPLETE,
            {
                "row": self.row,
                "token": self.token,
                "status": answer.status,
                "media": answer.content_type,
                "where": answer.location,
                "content": answer.body,
            },
        )
        return result.rowcount == 1


class IdempotencyKeys:
    """One product's keys: claims them for requests, or finds their kept answers."""

    def __init__(self, database: Database, product: str, ttl: int) -> None:
        self.database = database
        self.product = product
        self.ttl = timedelta(seconds=ttl)

    async def claim(self, account_id: int, key: str, fingerprint: str) -> tuple[int, str] | Answer:
        """``(row, lease token)`` of the key claimed now, or its kept answer; 409 when
        it was used with another request or its request is still running."""
        for _ in range(_ATTEMPTS):
            found = await self.database.reads.first(
                FIND, Found, account_id=account_id, product=self.product, key=key
            )
            now = utcnow()
            if found is not None and found.expires_at > now:
                if found.fingerprint != fingerprint:
                    raise Conflict(REUSED)
                if found.status_code is not None:
                    return Answer(
                        found.status_code, found.content_type, found.location, found.body or b""
                    )
                if found.locked_until > now:
                    raise Conflict(IN_PROGRESS)
            taken = await self._take(found, account_id, key, fingerprint)
            if taken is not None:
                return taken
        raise Conflict(IN_PROGRESS)

    async def _take(
        self, found: Found | None, account_id: int, key: str, fingerprint: str
    ) -> tuple[int, str] | None:
        """Insert the key's row, or take over ``found`` (expired or with its lease
        lapsed); ``None`` when another request got there first."""
        now = utcnow()
        token = secrets.token_hex(16)
        until, expires = now + LEASE, now + self.ttl
        try:
            async with self.database.transaction() as session:
                connection = await session.connection()
                if found is None:
                    await connection.execute(PURGE, {"now": now})
                    inserted = await connection.execute(
                        INSERT,
                        {
                            "account_id": account_id,
                            "product": self.product,
                            "key": key,
                            "fingerprint": fingerprint,
                            "lease_token": token,
                            "locked_until": until,
                            "expires_at": expires,
                        },
                    )
                    return int(inserted.scalar_one()), token
                taken = await connection.execute(
                    TAKE_OVER,
                    {
                        "row": found.id,
                        "seen": found.lease_token,
                        "now": now,
                        "new_fingerprint": fingerprint,
                        "token": token,
                        "until": until,
                        "expires": expires,
                    },
                )
        except IntegrityError:
            return None  # inserted by another request since it was looked for
        return (found.id, token) if taken.rowcount == 1 else None


def presented(headers: Iterable[tuple[bytes, bytes]]) -> tuple[str | None, bytes | None]:
    """The request's idempotency key (400 when malformed or repeated) and customer token."""
    key: str | None = None
    customer: bytes | None = None
    for name, value in headers:
        if name == _KEY_HEADER:
            if key is not None:
                raise BadRequest(f"Send one {HEADER} header")
            if not _KEY.fullmatch(value):
                raise BadRequest(BAD_KEY)
            key = value.decode("ascii")
        elif name == _CUSTOMER_HEADER:
            customer = value
    return key, customer


def fingerprint(scope: HTTPScope, body: bytes, customer: bytes | None) -> str:
    """What makes two requests the same request, hashed: each part length-prefixed,
    so no two different requests run together into the same bytes."""
    parts = (
        scope["method"].encode(),
        scope.get("raw_path") or scope["path"].encode(),
        scope.get("query_string", b""),
        hashlib.sha256(body).digest(),
        b"" if customer is None else b"\x01" + customer,
    )
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()
