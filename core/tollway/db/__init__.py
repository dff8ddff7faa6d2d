"""Persistence: SQLAlchemy 2 async, SQLite by default, PostgreSQL in production."""

from tollway.db.base import UTCDateTime, make_metadata, utcnow
from tollway.db.database import Database, unavailable

__all__ = ["Database", "UTCDateTime", "make_metadata", "unavailable", "utcnow"]
