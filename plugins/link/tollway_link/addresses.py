"""Where short links live: the base of their short URLs, the host serving them, and
the codes no link may have.

With ``short_link_base`` set (``https://go.example.com``) a link reads
``https://go.example.com/<code>`` and the gateway serves ``/<code>`` on that host (the
link plugin registers it with ``tollway_register_hosts``). Without it a link reads
``<origin>/l/<code>``, the origin being what trusted proxies say the request reached,
else the server's own address (:class:`tollway.PublicOrigin`), never the client's
``Host`` header, so nobody can make the API hand out links to a host of their choosing.
"""

from __future__ import annotations

import re
import secrets
import string
from typing import Any
from urllib.parse import urlsplit

from tollway import BadRequest, Gateway, PublicOrigin, UnprocessableEntity
from tollway_link.product import REDIRECTS
from tollway_link.settings import LinkSettings

CODE = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a code is made of (``fullmatch``; the schema's ``$`` would let a final newline in)."""
GENERATED = string.ascii_letters + string.digits
GENERATED_LENGTH = 7
"""62**7 (3.5e12) codes: a clash, retried, stays rare for billions of links."""
QR_MARKER = "qr=1"
"""The query a short link carries in a QR code drawn by this deployment."""
GATEWAY_SEGMENTS = ("api", "docs", "healthz", "metrics", "readyz", "schema")
"""First path segments the core serves or keeps for itself, beside the products' own."""


class Addresses:
    """The deployment's short URLs and codes (a service: one per gateway)."""

    def __init__(self, gateway: Gateway) -> None:
        base = gateway.product_settings(LinkSettings).short_link_base
        self.base = base.rstrip("/") if base else None
        """``short_link_base`` without a final ``/``, or ``None``."""
        self.origin = PublicOrigin(gateway.settings.trusted_proxies)
        products = gateway.registry.products.values()
        self.reserved = frozenset(GATEWAY_SEGMENTS) | {
            product.prefix.split("/")[1].lower() for product in products
        }
        """Codes refused, compared ignoring case: the first path segments the gateway
        serves itself, so that on a host shared with the API no code is hidden behind
        a route, and none reads like one."""

    @property
    def host(self) -> str | None:
        """The host serving ``/<code>``: ``short_link_base``'s, when the base has no
        path (a base such as ``https://example.com/go`` is routed by the operator's
        proxy to ``/l/<code>``)."""
        if self.base is None:
            return None
        parts = urlsplit(self.base)
        return parts.hostname if parts.path in ("", "/") else None

    def short_url_base(self, scope: Any) -> str:
        """What a code is appended to (after a ``/``) for a request's ``scope``."""
        return self.base or self.origin.of(scope) + REDIRECTS.prefix

    def scanned(self, content: str, origin: str) -> str | None:
        """``content`` with the QR marker (``?qr=1``) when it is one of this deployment's
        short links as the API hands them out for ``origin``, else ``None``: the code
        product asks (``tollway_qr_content``), so that scans count as ``(qr)``."""
        base = (self.base or origin + REDIRECTS.prefix) + "/"
        if content.startswith(base) and self.possible(content[len(base) :]):
            return content + "?" + QR_MARKER
        return None

    def check(self, code: str) -> str:
        """A code a caller chose: 400 when it is not one, 422 when it is reserved."""
        if not CODE.fullmatch(code):
            raise BadRequest("Invalid request body: code must be 1 to 64 of A-Z a-z 0-9 - _")
        if code.lower() in self.reserved:
            raise UnprocessableEntity(f"code {code!r} is reserved")
        return code

    def generate(self) -> str:
        """A random code that is not reserved (it may be taken: the insert retries)."""
        while True:
            code = "".join(secrets.choice(GENERATED) for _ in range(GENERATED_LENGTH))
            if code.lower() not in self.reserved:
                return code

    def possible(self, code: str) -> bool:
        """Whether any link can have ``code`` (the redirect looks up no other)."""
        return CODE.fullmatch(code) is not None and code.lower() not in self.reserved
