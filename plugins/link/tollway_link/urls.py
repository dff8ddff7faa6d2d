"""Which URLs a short link may send visitors to, in the form the redirect sends them.

A destination (or ``expired_url``) is an absolute ``http`` or ``https`` URL with a host
and no user name or password (``https://bank.example@evil.example`` reads like the bank
and goes elsewhere). It is kept as ASCII, so the ``Location`` header carries exactly
the stored text: an internationalised host in its IDNA (``xn--``) form, any other
non-ASCII character %-encoded as UTF-8. Surrounding whitespace is dropped; whitespace
or control characters inside are refused, as a browser would have %-encoded them.
Nothing is resolved: a short link may point anywhere, loopback and private addresses
included, since the visitor's browser follows it, not the gateway.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import quote, urlsplit, urlunsplit

from tollway import UnprocessableEntity

_UNSAFE = re.compile(r"[\x00-\x20\x7f-\x9f]")
"""Controls and spaces (ASCII and C1): never part of a URL as it is sent."""
_HOST_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")
_KEEP = "!#$%&'()*+,-./:;=?@[]~_"
"""Characters left as they are when non-ASCII ones are %-encoded (RFC 3986's
reserved and unreserved ones, and ``%`` of existing escapes)."""


def web_url(value: str, field: str) -> str:
    """``value`` as an ASCII absolute http(s) URL; 422 naming ``field`` otherwise."""
    url = value.strip()
    if _UNSAFE.search(url):
        raise _invalid(field, "must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (a port that is not a number raises here)
    except ValueError as error:
        raise _invalid(field, f"is not a valid URL: {error}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise _invalid(field, "must be an absolute http:// or https:// URL")
    host = parts.hostname
    if not host:
        raise _invalid(field, "has no host")
    if parts.username is not None or parts.password is not None:
        raise _invalid(field, "must not carry a user name or password")
    netloc = parts.netloc
    if not netloc.isascii():
        host = _idna(host, field)
        netloc = host if parts.port is None else f"{host}:{parts.port}"
    if not _HOST_NAME.fullmatch(host) and not _ip_literal(host):
        raise _invalid(field, "has a host that is not valid")
    path, query, fragment = (quote(part, safe=_KEEP) for part in parts[2:])
    return urlunsplit((parts.scheme.lower(), netloc, path, query, fragment))


def _idna(host: str, field: str) -> str:
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        raise _invalid(field, "has a host name that is not valid") from None


def _ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _invalid(field: str, why: str) -> UnprocessableEntity:
    return UnprocessableEntity(f"{field} {why}")
