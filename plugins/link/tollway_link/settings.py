"""``[products.link.settings]``: what an operator can configure (operations.md
documents each setting)."""

from __future__ import annotations

from urllib.parse import urlsplit

import msgspec


class LinkSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every field is optional."""

    short_link_base: str | None = None
    """The short links' address without the code, e.g. ``https://go.example.com``: links
    read ``https://go.example.com/<code>`` and the gateway answers ``/<code>`` on
    requests for that host. Unset, a link is ``<the API's own address>/l/<code>``."""
    visitor_secret: str | None = None
    """Key of the HMAC that turns (client address, user agent) into a visitor id; unset
    (or empty), the deployment secret ``link.visitors``, made once and kept in the
    database for every process. Changing it starts every visitor afresh."""
    redirect_cache_ttl: float = 1.0
    """Seconds a process may answer a code from memory after reading it: a change made
    through another process reaches its redirects within this bound (the process that
    made it forgets the code at once)."""
    click_flush_interval: float = 0.2
    """Seconds a click may wait in a process's memory before its batch is written (or,
    with ``redis_url``, sent to the Redis stream): the window a killed process can lose."""
    click_batch_size: int = 2000
    """Clicks written in one transaction at most: a bigger one costs less per click,
    and holds up the process's redirects longer while the writer works between two
    database calls."""
    click_stream: str | None = None
    """Redis stream carrying clicks to the writers (with ``redis_url``); unset,
    ``<job_queue_name>:link:clicks``, so that deployments sharing a Redis, kept apart
    by their job queue's name, keep their clicks apart too."""

    def __post_init__(self) -> None:
        if self.short_link_base is not None and self.short_link_base:
            parts = urlsplit(self.short_link_base)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("short_link_base must be an absolute http(s) URL")
            if parts.query or parts.fragment:
                raise ValueError("short_link_base must not have a query or fragment")
        if self.redirect_cache_ttl < 0:
            raise ValueError("redirect_cache_ttl must be >= 0")
        if self.click_flush_interval <= 0 or self.click_batch_size < 1:
            raise ValueError("click_flush_interval must be > 0 and click_batch_size >= 1")
