"""The loaded blocklist, and the lookups that keep checking it cheap on every request."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tollway_qr.blocklist.hosts import IPAddress, IPNetwork
from tollway_qr.blocklist.list_file import Entries, Pattern
from tollway_qr.blocklist.urls import Url, urls_in

__all__ = ["DEFAULT_BLOCKLIST_PATH", "BlockMatch", "Blocklist"]

DEFAULT_BLOCKLIST_PATH: Final = Path(__file__).with_name("blocklist.txt")
_DEFAULT_LABEL: Final = "blocklist.txt"


@dataclass(frozen=True, slots=True)
class BlockMatch:
    """Why a payload was refused: ``reason`` for the client, ``source`` for the operator.

    The two are separate because clients must learn what to change without learning the
    layout of the gateway's disk, while operators need ``file:line`` to fix a false hit.
    """

    reason: str
    source: str


class Blocklist:
    """Hosts, networks and patterns to refuse, with lookups sized for the request path.

    Hosts sit in a dict probed once per label suffix, networks in per-prefix-length dicts
    probed once per distinct prefix length, so both cost the same whatever the list size;
    patterns without groups share one alternation so a miss costs one regex search.
    """

    __slots__ = ("_any_pattern", "_hosts", "_networks", "_patterns")

    def __init__(self, entries: Entries) -> None:
        self._hosts = entries.hosts
        self._networks: dict[int, list[tuple[int, dict[int, tuple[IPNetwork, str]]]]] = {}
        by_version: dict[int, dict[int, dict[int, tuple[IPNetwork, str]]]] = {4: {}, 6: {}}
        for network, source in entries.networks.items():
            key = int(network.network_address) >> (network.max_prefixlen - network.prefixlen)
            table = by_version[network.version].setdefault(network.prefixlen, {})
            table[key] = (network, source)
        for version, tables in by_version.items():
            # Longest prefix first, so the reported network is the most specific one.
            self._networks[version] = sorted(tables.items(), reverse=True)
        self._patterns = list(entries.patterns.values())
        self._any_pattern = _combine(self._patterns)

    @classmethod
    def load(cls, paths: Sequence[str | Path] = (), *, include_default: bool = True) -> Blocklist:
        """Default list first, then the operators' files, which can only add entries.

        Adding only (never removing) keeps the shipped protections from being lost by a
        typo; an operator who wants none of them passes ``include_default=False``.
        """
        if isinstance(paths, str | Path):
            paths = [paths]  # one path, not a sequence of one-letter file names
        entries = Entries()
        if include_default:
            entries.read(DEFAULT_BLOCKLIST_PATH, _DEFAULT_LABEL)
        for path in paths:
            entries.read(Path(path), str(path))
        return cls(entries)

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
        for url in urls_in(data):
            match = self._check_url(url)
            if match is not None:
                return match
        return None

    def _check_url(self, url: Url) -> BlockMatch | None:
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

    def _check_address(self, address: IPAddress) -> BlockMatch | None:
        candidates: list[IPAddress] = [address]
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


def _combine(patterns: Sequence[Pattern]) -> re.Pattern[str] | None:
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
