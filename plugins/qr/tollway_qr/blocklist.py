"""The filter that keeps the public QR API from encoding links to known-bad places.

A QR code hides its destination until it is scanned, which makes it a favourite wrapper
for phishing links; a free, keyless generator should not be the one that printed them.
The filter is deliberately local and static: no network look-ups (they would put a third
party's latency and availability on every request, and leak what our users encode), just
lists of hosts, networks and patterns loaded once at start-up and checked in microseconds.

List file format (UTF-8, the shipped ``blocklist.txt`` documents the same)::

    # a comment: lines whose first non-blank character is '#', and blank lines, are ignored
    host phishing.test          # the host and every subdomain of it; may end in a comment
    ip 192.0.2.0/24             # URLs whose host is an address in this network
    pattern ^https?://[^/]*\\bpaypa[l1]-[^/]*verify

* ``host <name>``: blocks that host and all its subdomains (``evil.test`` blocks
  ``a.b.evil.test``, not ``notevil.test``).  Names are case-insensitive, a trailing dot
  is ignored and internationalised names may be written in Unicode or punycode: both sides
  are compared in their ASCII (punycode) form, so ``paypal.com`` spelled with a Cyrillic
  a (U+0430) can be listed as itself or as ``xn--pypal-4ve.com``.  Wildcards,
  URLs and IP addresses are refused: subdomains are already covered, and addresses
  belong on ``ip`` lines.
* ``ip <address or CIDR>``: blocks URLs whose host is a literal address in that network,
  however the address is spelled (``http://3221225985/`` is ``192.0.2.1`` to a browser).
  IPv4-mapped IPv6 addresses are checked against IPv4 networks too.  Host bits must be
  clear (``192.0.2.0/24``, not ``192.0.2.1/24``) so that typos do not go unnoticed.
* ``pattern <Python regex>``: blocks URLs the regex finds (``re.search``, case-insensitive)
  in the normalised URL: ``scheme://[userinfo@]host[:port]rest`` with the scheme lower-case,
  the host as compared by host rules (IP addresses in canonical form), the userinfo
  verbatim (so patterns can catch ``https://paypal.com@evil.example/``) and the path,
  query and fragment percent-decoded once.  Everything after ``pattern`` is the regex,
  ``#`` included, because ``#`` is meaningful in both URLs and regexes.  A pattern that
  matches the empty string is refused: it would block (nearly) every URL.

Any other line, an invalid regex, host or address, or an unreadable file raises
:class:`BlocklistError` naming ``file:line``: a list that silently half-loads would be
worse than a gateway that refuses to start.

What counts as a URL, decided to follow what scanners and browsers would open:

* ``scheme://host...`` with any scheme, and the web's "special" schemes (http, https,
  ftp, ws, wss) with any number of slashes or backslashes, since browsers accept
  ``https:evil.test`` and ``https:\\\\evil.test`` alike.  The host is found the way browsers
  find it (WHATWG URL rules), not the way :mod:`urllib.parse` does, because every
  difference between the two is a bypass: the host follows the *last* ``@`` of the
  authority, backslashes end the authority in special schemes, tabs and newlines are
  dropped, the host is percent-decoded and mapped per UTS #46 before IDNA encoding.
* Without a scheme: ``www.`` anything, ``host.tld`` or a dotted IPv4 address, optionally
  followed by ``:port`` and a path, without spaces; read as ``http://<data>``, because
  phone scanners and address bars open those.  A bare ``user@host`` is an e-mail address,
  not a URL.
* Text that is not one URL (prose, several lines, vCards, Wi-Fi credentials) is searched
  for embedded ``scheme://`` and ``www.`` links, since scanner apps make those tappable
  too; a contact card whose URL field points at a blocked host is refused like the bare
  URL.  Sentence punctuation after an embedded link is not part of it.
* ``mailto:``, ``tel:``, ``sms:``, ``geo:`` and other URIs without an authority are never
  blocked: the lists are about where a scan sends a browser, and e-mail domains are
  shared by far too many innocent addresses to be judged by host.
* URLs nested in a URL's query (``https://site/?next=https://evil.test``) are not
  followed: the scanner opens the outer host.  A pattern can cover such redirects.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeAlias
from urllib.parse import unquote

import idna

__all__ = ["DEFAULT_BLOCKLIST_PATH", "BlockMatch", "Blocklist", "BlocklistError"]

DEFAULT_BLOCKLIST_PATH: Final = Path(__file__).with_name("blocklist.txt")
_DEFAULT_LABEL: Final = "blocklist.txt"

_IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
_IPNetwork: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class BlockMatch:
    """Why a payload was refused: ``reason`` for the client, ``source`` for the operator.

    The two are separate because clients must learn what to change without learning the
    layout of the gateway's disk, while operators need ``file:line`` to fix a false hit.
    """

    reason: str
    source: str


class BlocklistError(ValueError):
    """A list file cannot be used; the message names ``file:line``."""


# --- URL recognition -------------------------------------------------------------------------

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

_DECIMAL: Final = re.compile(r"[0-9]+")
_OCTAL: Final = re.compile(r"[0-7]+")
_HEX: Final = re.compile(r"[0-9a-f]+")


@dataclass(frozen=True, slots=True)
class _Url:
    scheme: str
    userinfo: str | None
    host: str  # normalised: lower-case ASCII, no trailing dot; canonical text for addresses
    address: _IPAddress | None
    port: str
    rest: str

    def normalised(self) -> str:
        userinfo = "" if self.userinfo is None else f"{self.userinfo}@"
        host = f"[{self.host}]" if isinstance(self.address, ipaddress.IPv6Address) else self.host
        port = f":{self.port}" if self.port else ""
        rest = unquote(self.rest, errors="replace") if "%" in self.rest else self.rest
        return f"{self.scheme}://{userinfo}{host}{port}{rest}"


def _parse_url(text: str) -> _Url | None:
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


def _split_authority(scheme: str, rest: str, *, schemeless: bool) -> _Url | None:
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
            address: _IPAddress | None = ipaddress.IPv6Address(raw_host)
        except ValueError:
            return None  # browsers refuse malformed brackets, so nothing to block
        host = str(address)
    else:
        raw_host, _, port = hostport.partition(":")
        if not raw_host or (schemeless and _SCHEMELESS_HOST.fullmatch(raw_host) is None):
            return None
        host = _normalise_host(raw_host, percent_encoded=True)
        address = _parse_ipv4(host)
        if address is not None:
            host = str(address)
    if not host:
        return None
    return _Url(scheme, userinfo, host, address, port, tail)


def _normalise_host(host: str, *, percent_encoded: bool) -> str:
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


def _parse_ipv4(host: str) -> ipaddress.IPv4Address | None:
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


def _urls_in(data: str) -> Iterator[_Url]:
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


# --- the list itself ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Pattern:
    regex: re.Pattern[str]
    text: str
    source: str


class _Loader:
    """Accumulates entries across files; the first file to list an entry keeps its source."""

    def __init__(self) -> None:
        self.hosts: dict[str, str] = {}
        self.networks: dict[_IPNetwork, str] = {}
        self.patterns: dict[str, _Pattern] = {}

    def read(self, path: Path, label: str) -> None:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise BlocklistError(f"{label}: cannot read blocklist: {exc.strerror or exc}") from exc
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            bad_line = raw[: exc.start].count(b"\n") + 1
            raise BlocklistError(f"{label}:{bad_line}: not valid UTF-8") from exc
        # split("\n"), not splitlines(): line numbers must agree with the operator's editor.
        for number, line in enumerate(text.split("\n"), start=1):
            self._entry(line.strip(), f"{label}:{number}")

    def _entry(self, line: str, source: str) -> None:
        if not line or line.startswith("#"):
            return
        keyword, *rest = line.split(maxsplit=1)
        value = rest[0] if rest else ""
        if keyword == "pattern":
            self._pattern(value, source)
            return
        value = value.split("#", 1)[0].strip()
        if keyword == "host":
            self._host(value, source)
        elif keyword == "ip":
            self._ip(value, source)
        else:
            raise BlocklistError(
                f"{source}: unknown entry {keyword!r}; expected 'host', 'ip' or 'pattern'"
            )

    def _host(self, value: str, source: str) -> None:
        if not value or _WHITESPACE.search(value):
            raise BlocklistError(f"{source}: 'host' needs exactly one hostname")
        if value.startswith("*."):
            raise BlocklistError(
                f"{source}: {value!r}: host entries already cover subdomains; drop the '*.'"
            )
        if "/" in value or ":" in value or "@" in value:
            raise BlocklistError(
                f"{source}: {value!r} is not a hostname (use a 'pattern' line for URLs"
                " and an 'ip' line for addresses)"
            )
        host = _normalise_host(value, percent_encoded=False)
        if len(host) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in host.split(".")):
            raise BlocklistError(f"{source}: {value!r} is not a valid hostname")
        if _parse_ipv4(host) is not None or host.rsplit(".", 1)[-1].isdigit():
            raise BlocklistError(
                f"{source}: {value!r} ends in a number, so browsers read it as an IP address;"
                " use an 'ip' line"
            )
        self.hosts.setdefault(host, source)

    def _ip(self, value: str, source: str) -> None:
        try:
            network = ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            hint = ""
            with contextlib.suppress(ValueError):
                hint = f"; did you mean {ipaddress.ip_network(value, strict=False)}?"
            raise BlocklistError(
                f"{source}: {value!r} is not an IP address or network{hint}"
            ) from exc
        self.networks.setdefault(network, source)

    def _pattern(self, value: str, source: str) -> None:
        if not value:
            raise BlocklistError(f"{source}: 'pattern' needs a regular expression")
        try:
            regex = re.compile(value, re.IGNORECASE)
        except re.error as exc:
            raise BlocklistError(f"{source}: invalid regular expression {value!r}: {exc}") from exc
        if regex.search("") is not None:
            raise BlocklistError(
                f"{source}: pattern {value!r} matches the empty string, so it would block every URL"
            )
        if value not in self.patterns:
            self.patterns[value] = _Pattern(regex, value, source)


_HOST_LABEL: Final = re.compile(r"[a-z0-9_-]{1,63}")


class Blocklist:
    """Hosts, networks and patterns to refuse, with lookups sized for the request path.

    Hosts sit in a dict probed once per label suffix, networks in per-prefix-length dicts
    probed once per distinct prefix length, so both cost the same whatever the list size;
    patterns without groups share one alternation so a miss costs one regex search.
    """

    __slots__ = ("_any_pattern", "_hosts", "_networks", "_patterns")

    def __init__(self, loader: _Loader) -> None:
        self._hosts = loader.hosts
        self._networks: dict[int, list[tuple[int, dict[int, tuple[_IPNetwork, str]]]]] = {}
        by_version: dict[int, dict[int, dict[int, tuple[_IPNetwork, str]]]] = {4: {}, 6: {}}
        for network, source in loader.networks.items():
            key = int(network.network_address) >> (network.max_prefixlen - network.prefixlen)
            table = by_version[network.version].setdefault(network.prefixlen, {})
            table[key] = (network, source)
        for version, tables in by_version.items():
            # Longest prefix first, so the reported network is the most specific one.
            self._networks[version] = sorted(tables.items(), reverse=True)
        self._patterns = list(loader.patterns.values())
        self._any_pattern = _combine(self._patterns)

    @classmethod
    def load(cls, paths: Sequence[str | Path] = (), *, include_default: bool = True) -> Blocklist:
        """Default list first, then the operators' files, which can only add entries.

        Adding only (never removing) keeps the shipped protections from being lost by a
        typo; an operator who wants none of them passes ``include_default=False``.
        """
        if isinstance(paths, str | Path):
            paths = [paths]  # one path, not a sequence of one-letter file names
        loader = _Loader()
        if include_default:
            loader.read(DEFAULT_BLOCKLIST_PATH, _DEFAULT_LABEL)
        for path in paths:
            loader.read(Path(path), str(path))
        return cls(loader)

    def __len__(self) -> int:
        return (
            len(self._hosts)
            + sum(len(table) for tables in self._networks.values() for _, table in tables)
            + len(self._patterns)
        )

    def __repr__(self) -> str:
        return f"<Blocklist of {len(self)} entries>"

    def check(self, data: str) -> BlockMatch | None:
        """The first rule ``data`` breaks, or None; plain text costs a couple of string scans."""
        for url in _urls_in(data):
            match = self._check_url(url)
            if match is not None:
                return match
        return None

    def _check_url(self, url: _Url) -> BlockMatch | None:
        if url.address is not None:
            match = self._check_address(url.address)
        else:
            match = self._check_host(url.host)
        if match is None and self._patterns:
            match = self._check_patterns(url.normalised())
        return match

    def _check_host(self, host: str) -> BlockMatch | None:
        hosts = self._hosts
        if not hosts:
            return None
        suffix = host
        while True:
            source = hosts.get(suffix)
            if source is not None:
                where = "" if suffix == host else f" (under {suffix!r})"
                return BlockMatch(f"host {host!r} is on the blocklist{where}", source)
            dot = suffix.find(".")
            if dot < 0:
                return None
            suffix = suffix[dot + 1 :]

    def _check_address(self, address: _IPAddress) -> BlockMatch | None:
        candidates: list[_IPAddress] = [address]
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            candidates.append(address.ipv4_mapped)
        for candidate in candidates:
            value, bits = int(candidate), candidate.max_prefixlen
            for prefixlen, table in self._networks[candidate.version]:
                hit = table.get(value >> (bits - prefixlen))
                if hit is not None:
                    network, source = hit
                    return BlockMatch(
                        f"address {str(candidate)!r} is on the blocklist (network {network})",
                        source,
                    )
        return None

    def _check_patterns(self, url: str) -> BlockMatch | None:
        if self._any_pattern is not None and self._any_pattern.search(url) is None:
            candidates = [p for p in self._patterns if p.regex.groups]
        else:
            candidates = self._patterns
        for pattern in candidates:
            if pattern.regex.search(url) is not None:
                return BlockMatch(f"URL matches blocked pattern {pattern.text!r}", pattern.source)
        return None


def _combine(patterns: Sequence[_Pattern]) -> re.Pattern[str] | None:
    """One alternation of the group-free patterns, a fast "no" for the common case.

    Patterns with groups stay out because numbered backreferences would shift; patterns
    whose inline flags cannot be nested make the whole combination fall back to the loop.
    """
    simple = [p.text for p in patterns if not p.regex.groups]
    if not simple:
        return None
    try:
        return re.compile("|".join(f"(?:{text})" for text in simple), re.IGNORECASE)
    except re.error:
        return None
