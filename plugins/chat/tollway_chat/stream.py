"""The contact-facing live_chat stream and its tokens.

``POST /v1/chat/contacts/{id}/stream-token`` (scope ``chat:contacts:write``) gives the
account's backend a short-lived token for one contact; the contact's browser opens
``GET /v1/chat/stream?token=...`` (no API key: the token is the credential) and reads
Server-Sent Events: ``ready`` once, then one ``message`` per outgoing, non-private
message of the contact's live_chat conversations, and comments as keep-alives.

Tokens are JWTs (HS256) signed with ``[products.chat.settings] stream_secret``; when
it is unset, a random secret is made per gateway process, so tokens only work on the
process that issued them (set the secret when running several processes; the stream
itself is per process too, see ``tollway_chat.channels``). ``stream_token_ttl`` is the
lifetime in seconds (default 900).
"""

from __future__ import annotations

import secrets
import time
import weakref
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import jwt

from tollway import Unauthorized

if TYPE_CHECKING:
    from tollway import Gateway

AUDIENCE = "tollway-chat-stream"
_secrets: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _secret(gateway: Gateway) -> str:
    configured = gateway.settings.product("chat").settings.get("stream_secret")
    if configured:
        return str(configured)
    if gateway not in _secrets:
        _secrets[gateway] = secrets.token_urlsafe(32)
    return _secrets[gateway]


def issue(gateway: Gateway, account_id: int, contact_id: int) -> tuple[str, datetime]:
    ttl = int(gateway.settings.product("chat").settings.get("stream_token_ttl", 900))
    now = int(time.time())
    claims = {"aud": AUDIENCE, "sub": str(contact_id), "acc": account_id, "iat": now}
    claims["exp"] = now + ttl
    token = jwt.encode(claims, _secret(gateway), algorithm="HS256")
    return token, datetime.fromtimestamp(now + ttl, UTC)


def verify(gateway: Gateway, token: str) -> tuple[int, int]:
    """``(account_id, contact_id)`` of a valid token; else :class:`Unauthorized`."""
    try:
        claims = jwt.decode(
            token,
            _secret(gateway),
            algorithms=["HS256"],
            audience=AUDIENCE,
            options={"require": ["exp", "sub", "aud"]},
        )
        return int(claims["acc"]), int(claims["sub"])
    except (jwt.PyJWTError, KeyError, TypeError, ValueError):
        raise Unauthorized("Invalid or expired stream token") from None
