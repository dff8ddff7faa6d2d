"""Modules a reader can hold: none under core/ or plugins/ is over 500 lines (Alembic
migrations aside); a module that grows past it becomes a package split by concern."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 500


def test_no_module_is_over_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for folder in ("core", "plugins")
        for path in (ROOT / folder).rglob("*.py")
        if "migrations" not in path.parts
        and "build" not in path.parts
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > LIMIT
    }
    assert not long, f"modules over {LIMIT} lines: {long}"
