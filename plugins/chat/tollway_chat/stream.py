"""The contact-facing live_chat stream and its tokens.

``POST /v1/chat/contacts/{id}/stream-token`` (scope ``chat:contacts:write``) gives the
account's backend a short-lived token for one contact; the contact's browser opens
``GET /v1/chat/stream?token=...`` (no API key: the token is the credential) and reads
Server-Sent Events: ``ready`` once, then one ``message`` per outgoing, non-private
message of the contact's live_chat conversations, and comments as keep-alives.

Tokens are JWTs (HS256) signed with ``[products.chat.settings] stream_secret``; when
it is unset, with the deployment secret ``chat.stream`` that the first process to need
it makes and stores in the database (:mod:`tollway.secrets`), so a token issued by one
process opens a stream on any other. ``stream_token_ttl`` is the lifetime in seconds
(default 900).
"""

from __future__ import annotations

import time
import weakref
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import jwt

from tollway import Unauthorized
from tollway.secrets import deployment_secret

if TYPE_CHECKING:
    from tollway import Gateway

AUDIENCE = "tollway-chat-stream"
_secrets: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


async def _secret(gateway: Gateway) -> str:
    configured = gateway.settings.product("chat").settings.get("stream_secret")
    if configured:
        return str(configured)
    if gateway not in _secrets:
        _secrets[gateway] = await deployment_secret(gateway.database, "chat.stream")
    return _secrets[gateway]


async def issue(gateway: Gateway, account_id: int, contact_id: int) -> tuple[str, datetime]:
    ttl = int(gateway.settings.product("chat").settings.get("stream_token_ttl", 900))
    now = int(time.time())
    claims = {"aud": AUDIENCE, "sub": str(contact_id), "acc": account_id, "iat": now}
    claims["exp"] = now + ttl
    token = jwt.encode(claims, await _secret(gateway), algorithm="HS256")
    return token, datetime.fromtimestamp(now + ttl, UTC)


async def verify(gateway: Gateway, token: str) -> tuple[int, int]:
    """``(account_id, contact_id)`` of a valid token; else :class:`Unauthorized`."""
    try:
        claims = jwt.decode(
            token,
            await _secret(gateway),
            algorithms=["HS256"],
            audience=AUDIENCE,
            options={"require": ["exp", "sub", "aud"]},
        )
        return int(claims["acc"]), int(claims["sub"])
    except (jwt.PyJWTError, KeyError, TypeError, ValueError):
        raise Unauthorized("Invalid or expired stream token") from None
