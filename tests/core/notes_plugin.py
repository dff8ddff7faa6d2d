"""A plugin owning a table and its own Alembic branch, as product plugins do."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import ForeignKey, Integer, MetaData, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from tollway import Product, hookimpl
from tollway.db import make_metadata
from tollway.db.models import Account


class NotesBase(DeclarativeBase):
    metadata = make_metadata()


class Note(NotesBase):
    __tablename__ = "notes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey(Account.id, ondelete="CASCADE"), index=True)
    text: Mapped[str] = mapped_column(String(500))


class NotesPlugin:
    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(Product("notes", "/v1/notes"))

    @hookimpl
    def tollway_register_models(self, register: Callable[[MetaData, Path | None], None]) -> None:
        register(NotesBase.metadata, Path(__file__).parent / "notes_migrations")
