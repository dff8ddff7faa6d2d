"""What a payload links to, found the way phone scanners and browsers would find it.

The host is found the way browsers find it (WHATWG URL rules), not the way
:mod:`urllib.parse` does, because every difference between the two is a bypass. Which
texts count as links, and which never do, is listed in docs/blocklist-format.md.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

from tollway_qr.blocklist.hosts import IPAddress, normalise_host, parse_ipv4

__all__ = ["Url", "urls_in"]

_SPECIAL_SCHEMES: Final = frozenset({"http", "https", "ftp", "ws", "wss"})
_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_AUTHORITY_END: Final = re.compile(r"[/?#]")
_WHITESPACE: Final = re.compile(r"\s")
# WHATWG strips leading and trailing C0 controls and spaces, and drops tabs and newlines.
_C0_AND_SPACE: Final = "".join(map(chr, range(0x21)))
_TAB_NEWLINE: Final = str.maketrans("", "", "\t\n\r")
# A scheme-less string is only a URL if its host looks like a public name or an address.
_SCHEMELESS_HOST: Final = re.compile(
    r"www\..+"
    r"|(?:[^\W_](?:[\w-]*[^\W_])?\.)+(?:[^\W\d_]{2,63}|xn--[a-z0-9-]+)\.?"
    r"|\d{1,3}(?:\.\d{1,3}){3}",
    re.IGNORECASE,
)
_EMBEDDED: Final = re.compile(
    r"(?<![\w+.-])(?:[a-z][a-z0-9+.-]*://|www\.)[^\s<>\"'`]+", re.IGNORECASE
)
_WWW: Final = re.compile(r"www\.", re.IGNORECASE)
# Linkifiers leave sentence punctuation outside an embedded link; so do we.
_TRAILING_PUNCTUATION: Final = ".,;:!?)]}'\""


@dataclass(frozen=True, slots=True)
class Url:
    """A link as a browser would open it."""

    scheme: str
    userinfo: str | None
    host: str  # normalised: lower-case ASCII, no trailing dot; canonical text for addresses
    address: IPAddress | None
    port: str
    rest: str

    def normalised(self) -> str:
        """What patterns are searched in: ``scheme://[userinfo@]host[:port]rest``, the rest
        percent-decoded once."""
        userinfo = "" if self.userinfo is None else f"{self.userinfo}@"
        host = f"[{self.host}]" if isinstance(self.address, ipaddress.IPv6Address) else self.host
        port = f":{self.port}" if self.port else ""
        rest = unquote(self.rest, errors="replace") if "%" in self.rest else self.rest
        return f"{self.scheme}://{userinfo}{host}{port}{rest}"


def _parse_url(text: str) -> Url | None:
    """The URL ``text`` would open, or None when a scanner would not treat it as a link."""
    scheme_match = _SCHEME.match(text)
    if scheme_match is not None and (
        "." not in scheme_match.group(1) or text.startswith("//", scheme_match.end())
    ):
        # A dotted "scheme" without "//" is really "host.tld:port/...", handled below.
        scheme = scheme_match.group(1).lower()
        rest = text[scheme_match.end() :]
        if scheme in _SPECIAL_SCHEMES:
            rest = rest.replace("\\", "/").lstrip("/")
        elif rest.startswith("//"):
            rest = rest[2:]
        else:
            return None  # mailto:, tel:, WIFI:, BEGIN:VCARD and friends have no host
        return _split_authority(scheme, rest, schemeless=False)
    if _WHITESPACE.search(text) is not None:
        return None
    return _split_authority("http", text.replace("\\", "/"), schemeless=True)


def _split_authority(scheme: str, rest: str, *, schemeless: bool) -> Url | None:
    end = _AUTHORITY_END.search(rest)
    authority, tail = (rest, "") if end is None else (rest[: end.start()], rest[end.start() :])
    at = authority.rfind("@")
    userinfo = authority[:at] if at >= 0 else None
    hostport = authority[at + 1 :]
    if schemeless and userinfo is not None and not tail:
        return None  # "alice@example.com" is an e-mail address
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            return None
        raw_host, port = hostport[1:close], hostport[close + 1 :].removeprefix(":")
        try:
            address: IPAddress | None = ipaddress.IPv6Address(raw_host)
        except ValueError:
            return None  # browsers refuse malformed brackets, so nothing to block
        host = str(address)
    else:
        raw_host, _, port = hostport.partition(":")
        if not raw_host or (schemeless and _SCHEMELESS_HOST.fullmatch(raw_host) is None):
            return None
        host = normalise_host(raw_host, percent_encoded=True)
        address = parse_ipv4(host)
        if address is not None:
            host = str(address)
    if not host:
        return None
    return Url(scheme, userinfo, host, address, port, tail)


def urls_in(data: str) -> Iterator[Url]:
    """The URL ``data`` is, or failing that the links embedded in it."""
    text = data.strip(_C0_AND_SPACE)
    if not text:
        return
    compact = text.translate(_TAB_NEWLINE)
    if _WHITESPACE.search(compact) is None:
        whole = _parse_url(compact)
        if whole is not None:
            yield whole
            if len(compact) == len(text):
                return
            # Line breaks: a browser joins the lines, a scanner app may linkify each one.
    if "://" not in text and _WWW.search(text) is None:
        return  # the common case of plain text: no candidate link at all
    for found in _EMBEDDED.finditer(text):
        url = _parse_url(found.group().rstrip(_TRAILING_PUNCTUATION))
        if url is not None:
            yield url
