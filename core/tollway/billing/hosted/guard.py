"""The proof that a ``POST`` is the form its page rendered, not one another site made.

A page sets a random nonce in a cookie (``HttpOnly``, ``SameSite=Strict``, scoped to
the page's own path) and puts HMAC(deployment secret, session + nonce) in the form's
hidden ``csrf_token``. A ``POST`` is the page's own when it carries the pair and the
browser does not say it came from another site (``Sec-Fetch-Site``, else ``Origin``).
The secret is the deployment's (:func:`tollway.deployment_secret`), so any process
accepts a form another rendered.
"""

from __future__ import annotations

import hmac
import re
import secrets
from datetime import datetime
from typing import Any

from tollway.db import Database, utcnow
from tollway.net import PublicOrigin
from tollway.secrets import deployment_secret, signature

NONCE = re.compile(r"[A-Za-z0-9_-]{22}")
"""A cookie's nonce: ``secrets.token_urlsafe(16)``."""
SAME_ORIGIN = frozenset({"same-origin", "none"})
"""``Sec-Fetch-Site`` values of a request the page's own form (or the visitor,
``none``) made; ``same-site`` and ``cross-site`` ones are refused."""


class FormGuard:
    """The nonce cookie ``cookie`` of the pages under ``prefix`` (each page's at
    ``<prefix>/<session id>``) and the tokens signed with the deployment secret
    ``secret``."""

    def __init__(
        self, database: Database, origin: PublicOrigin, *, cookie: str, prefix: str, secret: str
    ) -> None:
        self.database = database
        self.origin = origin
        self.cookie = cookie
        self.prefix = prefix
        self.secret = secret
        self._key: bytes | None = None

    def nonce(self, scope: Any) -> str:
        """The browser's nonce (kept, so the page open in two tabs works in both), or a
        new one."""
        return self._sent_nonce(scope) or secrets.token_urlsafe(16)

    async def token(self, subject: str, nonce: str) -> str:
        """The form's hidden token for ``nonce`` on the page of ``subject`` (what the
        page stores of its session: never the session id itself)."""
        if self._key is None:
            self._key = (await deployment_secret(self.database, self.secret)).encode()
        return signature(self._key, subject, nonce)

    def set_cookie(
        self, scope: Any, session_id: str, nonce: str, expires_at: datetime
    ) -> tuple[str, str]:
        """The ``Set-Cookie`` header keeping ``nonce`` until the session expires."""
        seconds = max(1, int((expires_at - utcnow()).total_seconds()))
        cookie = (
            f"{self.cookie}={nonce}; Path={self.prefix}/{session_id}; Max-Age={seconds}; "
            "HttpOnly; SameSite=Strict"
        )
        if self.origin.of(scope).startswith("https:"):
            cookie += "; Secure"
        return ("set-cookie", cookie)

    async def verified_nonce(self, scope: Any, subject: str, form: dict[str, str]) -> str | None:
        """The nonce of a form this page rendered for ``subject``, sent from this
        origin; ``None`` for any other (a forgery, or a form whose cookie is gone)."""
        nonce = self._sent_nonce(scope)
        if nonce is None or not self._from_this_origin(scope):
            return None
        expected = (await self.token(subject, nonce)).encode()
        if not hmac.compare_digest(expected, form.get("csrf_token", "").encode()):
            return None
        return nonce

    def _from_this_origin(self, scope: Any) -> bool:
        """Whether the browser says the request came from this origin: its
        ``Sec-Fetch-Site``, else its ``Origin`` (``null``, as the page's own form sends
        it under ``Referrer-Policy: no-referrer``, says nothing); the token decides."""
        site = _header(scope, b"sec-fetch-site")
        if site is not None:
            return site.lower() in SAME_ORIGIN
        origin = _header(scope, b"origin") or "null"
        return origin in ("null", self.origin.of(scope))

    def _sent_nonce(self, scope: Any) -> str | None:
        """The page's nonce from the request's cookies, when one is well-formed."""
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        for name, value in headers:
            if name != b"cookie":
                continue
            for pair in value.decode("latin-1").split(";"):
                key, _, nonce = pair.strip().partition("=")
                if key == self.cookie and NONCE.fullmatch(nonce):
                    return nonce
        return None


def _header(scope: Any, name: bytes) -> str | None:
    """The first ``name`` header of the request."""
    headers: list[tuple[bytes, bytes]] = scope["headers"]
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None
