"""The contact-facing live_chat stream's tokens.

``POST /v1/chat/contacts/{id}/stream-token`` (scope ``chat:contacts:write``) gives the
account's backend a short-lived token for one contact; the contact's browser opens
``GET /v1/chat/stream?token=...`` (no API key: the token is the credential) and reads
Server-Sent Events: ``ready`` once, then one ``message`` per outgoing, non-private
message of the contact's live_chat conversations, and comments as keep-alives.

Tokens are JWTs (HS256) signed with ``[products.chat.settings] stream_secret``; when
it is unset, with the deployment secret ``chat.stream`` that the first process to need
it makes and stores in the database (``tollway.deployment_secret``), so a token issued
by one process opens a stream on any other. ``stream_token_ttl`` is the lifetime in
seconds (default 900).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import jwt

from tollway import Unauthorized, deployment_secret
from tollway_chat.settings import ChatSettings

if TYPE_CHECKING:
    from tollway import Gateway

AUDIENCE = "tollway-chat-stream"


class StreamTokens:
    """Issues and checks the gateway's stream tokens (a service: one per gateway)."""

    def __init__(self, gateway: Gateway) -> None:
        settings = gateway.product_settings(ChatSettings)
        self._database = gateway.database
        self._secret = settings.stream_secret or None
        self.ttl = settings.stream_token_ttl

    async def _key(self) -> str:
        if self._secret is None:
            self._secret = await deployment_secret(self._database, "chat.stream")
        return self._secret

    async def issue(self, account_id: int, contact_id: int) -> tuple[str, datetime]:
        """A token for the account's contact, and when it expires."""
        now = int(time.time())
        claims = {"aud": AUDIENCE, "sub": str(contact_id), "acc": account_id, "iat": now}
        claims["exp"] = now + self.ttl
        token = jwt.encode(claims, await self._key(), algorithm="HS256")
        return token, datetime.fromtimestamp(now + self.ttl, UTC)

    async def verify(self, token: str) -> tuple[int, int]:
        """``(account_id, contact_id)`` of a valid token; else :class:`Unauthorized`."""
        try:
            claims = jwt.decode(
                token,
                await self._key(),
                algorithms=["HS256"],
                audience=AUDIENCE,
                options={"require": ["exp", "sub", "aud"]},
            )
            return int(claims["acc"]), int(claims["sub"])
        except (jwt.PyJWTError, KeyError, TypeError, ValueError):
            raise Unauthorized("Invalid or expired stream token") from None
