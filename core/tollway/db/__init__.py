"""Persistence: SQLAlchemy 2 async, SQLite by default, PostgreSQL in production."""

from tollway.db.base import UTCDateTime, make_metadata, utcnow
from tollway.db.database import Database, unavailable
from tollway.db.reads import (
    PAGE_LIMIT,
    PAGE_OFFSET,
    AnySelect,
    Paged,
    Reads,
    columns_of,
    count_of,
    escape_like,
)
from tollway.db.sqlite import Write
from tollway.db.tallies import Tally

__all__ = [
    "PAGE_LIMIT",
    "PAGE_OFFSET",
    "AnySelect",
    "Database",
    "Paged",
    "Reads",
    "Tally",
    "UTCDateTime",
    "Write",
    "columns_of",
    "count_of",
    "escape_like",
    "make_metadata",
    "unavailable",
    "utcnow",
]
