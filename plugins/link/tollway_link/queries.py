"""The short links product's reads: one statement each, rows straight into Structs.

A ``GET`` needs no transaction and no ORM objects (:class:`tollway.Reads`). Every
query of the API is filtered by the account, so another account's link is simply not
found; the redirect's lookup by code is the one read across accounts.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import cache, partial

from sqlalchemy import BindParameter, ColumnElement, bindparam, or_, select

from tollway import PAGE_LIMIT, PAGE_OFFSET, NotFound, Paged, Reads, count_of, escape_like
from tollway_link import schemas
from tollway_link.models import Link

ACCOUNT: BindParameter[int] = bindparam("account_id")

LINK_COLUMNS = (
    Link.public_id,
    Link.code,
    Link.destination_url,
    Link.title,
    Link.tags,
    Link.expires_at,
    Link.expired_url,
    Link.max_clicks,
    Link.clicks,
    Link.created_at,
    Link.updated_at,
)
"""A link's record, but its ``short_url``, which depends on the request."""


def link_row(
    base: str,
    public_id: str,
    code: str,
    destination_url: str,
    title: str | None,
    tags: list[str],
    expires_at: datetime | None,
    expired_url: str | None,
    max_clicks: int | None,
    clicks: int,
    created_at: datetime,
    updated_at: datetime,
) -> schemas.Link:
    """The record of the columns :data:`LINK_COLUMNS` read, its short URL on ``base``."""
    return schemas.Link(
        public_id,
        code,
        f"{base}/{code}",
        destination_url,
        title,
        tags,
        expires_at,
        expired_url,
        max_clicks,
        clicks,
        created_at,
        updated_at,
    )


LINK = select(*LINK_COLUMNS).where(Link.public_id == bindparam("id"), Link.account_id == ACCOUNT)


@cache
def _link_page(search: bool) -> Paged:
    """Newest first; ``search``: ``pattern`` (a ``LIKE`` pattern) matches the code or
    the destination, ignoring case."""
    conditions: list[ColumnElement[bool]] = [Link.account_id == ACCOUNT]
    if search:
        pattern: BindParameter[str] = bindparam("pattern")
        conditions.append(
            or_(
                Link.code.ilike(pattern, escape="\\"),
                Link.destination_url.ilike(pattern, escape="\\"),
            )
        )
    page = select(*LINK_COLUMNS).where(*conditions).order_by(Link.id.desc())
    return Paged(page.offset(PAGE_OFFSET).limit(PAGE_LIMIT), count_of(Link, *conditions))


class LinkReads:
    """One account's links, read without a transaction, their short URLs on ``base``."""

    def __init__(self, reads: Reads, account_id: int, base: str) -> None:
        self.reads = reads
        self.account_id = account_id
        self.row: Callable[..., schemas.Link] = partial(link_row, base)

    async def link(self, link_id: str) -> schemas.Link:
        found = await self.reads.first(LINK, self.row, id=link_id, account_id=self.account_id)
        if found is None:
            raise NotFound(f"Link {link_id} not found")
        return found

    async def list_links(
        self, q: str, *, offset: int, limit: int
    ) -> tuple[list[schemas.Link], int]:
        """Newest first; ``q`` matches a substring of the code or the destination,
        ignoring case."""
        return await self.reads.page(
            _link_page(bool(q)),
            self.row,
            account_id=self.account_id,
            pattern=f"%{escape_like(q)}%",
            offset=offset,
            limit=limit,
        )
