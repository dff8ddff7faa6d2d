"""Where a hosted card page sends the visitor's browser on: a URL an API caller gave
(a shop's success page, an app's settings page), checked when it is given (400), not
resolved.

Such a URL is absolute ``http``/``https`` of ASCII characters with a host name or an
IPv4 address, no user name or password, at most :data:`tollway.MAX_URL_LENGTH`
characters: the page's Content-Security-Policy names its origin in ``form-action``
(:func:`csp_origin`), which a policy can only say of such hosts.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated
from urllib.parse import urlsplit

import msgspec

from tollway.errors import BadRequest
from tollway.webhooks.ssrf import MAX_URL_LENGTH

Url = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_URL_LENGTH)]
"""A body field holding such a URL (then checked by :func:`return_url`)."""

_UNSAFE = re.compile(r"[\x00-\x20\x7f]")
_HOST_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")


def return_url(value: str, field: str) -> str:
    """``value`` when it is a URL the visitor's browser may be sent to; 400 naming
    ``field`` otherwise."""
    if _UNSAFE.search(value) or not value.isascii():
        raise _invalid(field, "must be ASCII without spaces or control characters (%-encode them)")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (a port that is not a number raises here)
    except ValueError:
        raise _invalid(field, "is not a valid URL") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise _invalid(field, "must be an absolute http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        raise _invalid(field, "must not carry a user name or password")
    if not (_HOST_NAME.fullmatch(parts.hostname) or _ipv4(parts.hostname)):
        raise _invalid(field, "must have a host name or an IPv4 address")
    return value


def csp_origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL :func:`return_url` accepted, as a CSP source."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}{port}"


def _ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


def _invalid(field: str, why: str) -> BadRequest:
    return BadRequest(f"Invalid request body: {field} {why}")
