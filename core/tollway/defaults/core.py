"""Registers the core's own tables; their migrations are the ``tollway`` branch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import MetaData

from tollway.db.models import CoreBase
from tollway.hookspecs import hookimpl


@hookimpl
def tollway_register_models(register: Callable[[MetaData, Path | None], None]) -> None:
    register(CoreBase.metadata, None)
