"""Full-text search of products, the database's own: PostgreSQL's ``tsvector`` (the
expression of the migration's GIN index, words split at every non-word character) or
SQLite's FTS5 table. Every word of a search must start a word of the name or the
description: ``burg chee`` finds "Burger with cheese", not "Cheeseburger"."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    bindparam,
    column,
    func,
    literal_column,
    select,
    table,
)

MAX_SEARCH_WORDS = 10
_WORD = re.compile(r"\w+")


def search_words(search: str) -> list[str]:
    """The words a product search looks for (lowercased, at most ten)."""
    return [word.lower() for word in _WORD.findall(search)][:MAX_SEARCH_WORDS]


def matches(dialect: str) -> ColumnElement[bool]:
    """Products whose name or description has a word starting with each of ``terms``."""
    terms: BindParameter[str] = bindparam("terms")
    if dialect == "postgresql":
        document: ColumnElement[Any] = literal_column(
            "to_tsvector('simple', regexp_replace("
            "pos_products.name || ' ' || pos_products.description, '\\W+', ' ', 'g'))"
        )
        matched: ColumnElement[bool] = document.op("@@")(
            func.to_tsquery(literal_column("'simple'"), terms)
        )
        return matched
    fts = table("pos_products_fts", column("rowid"))
    whole: ColumnElement[Any] = literal_column("pos_products_fts")  # FTS5's query column
    found: Any = select(fts.c.rowid).where(whole.op("MATCH")(terms))
    return literal_column("pos_products.rowid").in_(found)


def search_terms(words: Sequence[str], dialect: str) -> str:
    """``words`` as the database's full-text query: every word, as a prefix."""
    if dialect == "postgresql":
        return " & ".join(f"{word}:*" for word in words)
    return " AND ".join(f'"{word}"*' for word in words)
