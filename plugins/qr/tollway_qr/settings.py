"""``[products.qr.settings]``: what an operator can configure."""

from __future__ import annotations

import msgspec


class QrSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every field is optional; docs/public-qr.md documents each."""

    blocklists: list[str] = []
    """Extra blocklist files (the format is in docs/blocklist-format.md)."""
    default_blocklist: bool = True
    """Also refuse the hosts of the list shipped with the plugin."""
    cache_bytes: int = msgspec.field(default=64 * 1024 * 1024)
    """Bytes of rendered images kept in memory for repeated requests."""

    def __post_init__(self) -> None:
        if self.cache_bytes < 0:
            raise ValueError("cache_bytes must be >= 0")
