"""The filter that keeps the public QR API from encoding links to known-bad places.

A QR code hides its destination until it is scanned, which makes it a favourite wrapper
for phishing links; a free, keyless generator should not be the one that printed them.
The filter is deliberately local and static: no network look-ups (they would put a third
party's latency and availability on every request, and leak what our users encode), just
lists of hosts, networks and patterns loaded once at start-up and checked in microseconds.

The list file format, and what counts as a link, are in docs/blocklist-format.md. The
parts: ``list_file`` reads the lists, ``hosts`` and ``urls`` put names and links in the
form browsers use, ``matching`` holds the loaded list and its lookups; ``blocklist.txt``
is the default list shipped with the package.
"""

from __future__ import annotations

from tollway_qr.blocklist.list_file import BlocklistError
from tollway_qr.blocklist.matching import DEFAULT_BLOCKLIST_PATH, Blocklist, BlockMatch

__all__ = ["DEFAULT_BLOCKLIST_PATH", "BlockMatch", "Blocklist", "BlocklistError"]
