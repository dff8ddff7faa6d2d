"""``[products.analytics.settings]``: what an operator can configure."""

from __future__ import annotations

from urllib.parse import urlsplit

import msgspec


class AnalyticsSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every field is optional."""

    inline_export_max_rows: int = 400
    """Exports of a series longer than this many rows are made by a job on the job
    queue (the export answers ``pending`` at once); shorter ones in the request. 400
    covers a year by day."""
    public_url: str | None = None
    """The base of download URLs, e.g. ``https://api.example.com``; unset, the origin
    the request reached (through trusted proxies), never the client's ``Host``."""
    download_secret: str | None = None
    """Key of the HMAC signing download URLs; unset (or empty), the deployment secret
    ``analytics.downloads``, made once and kept in the database for every process."""

    def __post_init__(self) -> None:
        if self.inline_export_max_rows < 1:
            raise ValueError("inline_export_max_rows must be >= 1")
        if self.public_url:
            parts = urlsplit(self.public_url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("public_url must be an absolute http(s) URL")
