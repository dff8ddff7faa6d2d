"""Conditional requests: whether a client's copy is still the one a route would send."""

from __future__ import annotations


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 ``If-None-Match`` (weak comparison): a list of (possibly weak) tags, or
    ``*``, naming ``etag``: the answer is a 304."""
    if not if_none_match:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags
