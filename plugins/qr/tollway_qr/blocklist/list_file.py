"""Reading list files into entries: one ``host``, ``ip`` or ``pattern`` per line, as
docs/blocklist-format.md describes. Any line that is not one of these stops the gateway
from starting, naming ``file:line``."""

from __future__ import annotations

import contextlib
import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tollway_qr.blocklist.hosts import IPNetwork, normalise_host, parse_ipv4

__all__ = ["BlocklistError", "Entries", "Pattern"]

_WHITESPACE: Final = re.compile(r"\s")
_HOST_LABEL: Final = re.compile(r"[a-z0-9_-]{1,63}")


class BlocklistError(ValueError):
    """A list file cannot be used; the message names ``file:line``."""


@dataclass(frozen=True, slots=True)
class Pattern:
    """A ``pattern`` entry: the compiled regex, its text as written, and where."""

    regex: re.Pattern[str]
    text: str
    source: str


class Entries:
    """Accumulates entries across files; the first file to list an entry keeps its source.

    Sources are ``file:line``, with the file named by the ``label`` it was read under.
    """

    def __init__(self) -> None:
        self.hosts: dict[str, str] = {}
        """Normalised host name -> source."""
        self.networks: dict[IPNetwork, str] = {}
        """Network (a single address is a /32 or /128) -> source."""
        self.patterns: dict[str, Pattern] = {}
        """Regex text -> the pattern."""

    def read(self, path: Path, label: str) -> None:
        """Add the entries of the file at ``path``; :class:`BlocklistError` on any bad line."""
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
        host = normalise_host(value, percent_encoded=False)
        if len(host) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in host.split(".")):
            raise BlocklistError(f"{source}: {value!r} is not a valid hostname")
        if parse_ipv4(host) is not None or host.rsplit(".", 1)[-1].isdigit():
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
            self.patterns[value] = Pattern(regex, value, source)
