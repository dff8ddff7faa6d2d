"""Host names and addresses in the one form a browser looks them up in, so that a list
entry and a URL compare equal however either is spelled."""

from __future__ import annotations

import contextlib
import ipaddress
import re
import unicodedata
from typing import Final, TypeAlias
from urllib.parse import unquote

import idna

__all__ = ["IPAddress", "IPNetwork", "normalise_host", "parse_ipv4"]

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network

_DECIMAL: Final = re.compile(r"[0-9]+")
_OCTAL: Final = re.compile(r"[0-7]+")
_HEX: Final = re.compile(r"[0-9a-f]+")


def normalise_host(host: str, *, percent_encoded: bool) -> str:
    """``host`` as a browser would look it up, so a list entry and a URL compare equal."""
    if percent_encoded and "%" in host:
        host = unquote(host, errors="replace")
    host = host.lower() if host.isascii() else _idna_ascii(host)
    return host.rstrip(".")


def _idna_ascii(host: str) -> str:
    """Punycode form after UTS #46 mapping (non-transitional, as browsers do).

    The mapping is what defeats invisible tricks: soft hyphens vanish, full-width letters
    and ideographic full stops become ASCII.  The IDNA 2008 validity checks are skipped on
    purpose: they only ever reject, and a name they reject (an emoji domain, say) still
    needs one stable ASCII form to be listable.
    """
    try:
        mapped = idna.uts46_remap(host, std3_rules=False, transitional=False)
    except idna.IDNAError:
        mapped = unicodedata.normalize("NFKC", host).lower()
    labels = []
    for label in mapped.split("."):
        if not label.isascii():
            with contextlib.suppress(UnicodeError):
                label = "xn--" + label.encode("punycode").decode("ascii")
        labels.append(label)
    return ".".join(labels)


def _ipv4_number(part: str) -> int | None:
    if part.startswith("0x"):
        digits, base, syntax = part[2:], 16, _HEX
    elif len(part) > 1 and part.startswith("0"):
        digits, base, syntax = part[1:], 8, _OCTAL
    else:
        digits, base, syntax = part, 10, _DECIMAL
    if not digits:
        return 0 if base == 16 else None
    return int(digits, base) if syntax.fullmatch(digits) else None


def parse_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The WHATWG IPv4 parser, because phishers write ``http://3221225985/`` or ``0xc0.0.2.1``.

    Returns None for names.  A host that ends in a number yet fails to parse is refused by
    browsers outright, so it is harmless to treat it as an (unlisted) name.
    """
    parts = host.split(".")
    last = parts[-1]
    if not last or last[0] not in "0123456789":
        return None  # the cheap exit for every ordinary domain name
    if len(parts) > 4:
        return None
    numbers = []
    for part in parts:
        number = _ipv4_number(part)
        if number is None:
            return None
        numbers.append(number)
    if any(number > 255 for number in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        return None
    value = numbers[-1]
    for index, number in enumerate(numbers[:-1]):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)
