"""Request parameters every product reads the same way, and the list envelope.

Ids are database integer keys: a path id outside what the column holds is a 400, not
a database error. Lists are paged with ``page`` (1-based) and ``limit``, answered in
:class:`ListPage`'s envelope ``{"data": [...], "total", "page", "limit"}``.
"""

from __future__ import annotations

from typing import Annotated, Generic, TypeVar

import msgspec
from litestar.params import PathParameter, QueryParameter

T = TypeVar("T")

MAX_ROW_ID = 2**31 - 1
"""The largest id an integer primary key holds (PostgreSQL ``integer``)."""

MAX_PAGE = 100_000

Id = Annotated[int, PathParameter(ge=1, le=MAX_ROW_ID)]
"""A row id in the path."""

FilterId = Annotated[int | None, QueryParameter(ge=1, le=MAX_ROW_ID)]
"""An optional row id filtering a list (``?inbox_id=3``)."""

Page = Annotated[int, QueryParameter(ge=1, le=MAX_PAGE, description="1-based page number.")]
"""The page of a list to return, from 1."""


def page_limit(maximum: int) -> object:
    """The ``limit`` parameter of a list returning at most ``maximum`` items a page:
    ``limit: Annotated[int, page_limit(50)] = 25``."""
    return QueryParameter(ge=1, le=maximum, description=f"1-{maximum}.")


def offset(page: int, limit: int) -> int:
    """The number of items before ``page``."""
    return (page - 1) * limit


class ListPage(msgspec.Struct, Generic[T]):
    """One page of a list: its items, how many there are in all, and where it is."""

    data: list[T]
    total: int
    page: int
    limit: int
