"""Plugins use the public front only: every name they import from tollway is exported.

The public front is ``tollway`` itself, ``tollway.testing`` (the pytest plugin),
``tollway.billing`` (the billing engine), ``tollway.billing.hosted`` (the hosted card
page kit) and ``tollway.cli`` (the command line), each with ``__all__``. Everything else in the
core may change without notice; a plugin importing it, its tests, its migrations or
the tutorial plugin in docs/writing-a-plugin.md, fails here, naming file and line.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_MODULES = (
    "tollway",
    "tollway.testing",
    "tollway.cli",
    "tollway.billing",
    "tollway.billing.hosted",
)


def _public_names() -> dict[str, set[str]]:
    return {name: set(importlib.import_module(name).__all__) for name in PUBLIC_MODULES}


def _plugin_sources() -> Iterator[tuple[str, str]]:
    for path in sorted((ROOT / "plugins").rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if "build" in parts or any(part.endswith(".egg-info") for part in parts):
            continue
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    tutorial = (ROOT / "docs" / "writing-a-plugin.md").read_text(encoding="utf-8")
    for number, block in enumerate(re.findall(r"^```python\n(.*?)^```", tutorial, re.M | re.S)):
        yield f"docs/writing-a-plugin.md (python block {number + 1})", block


def violations(source: str, public: dict[str, set[str]]) -> Iterator[tuple[int, str]]:
    """``(line, what)`` for each import of a tollway name that is not public."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            module = node.module
            if module != "tollway" and not module.startswith("tollway."):
                continue
            if module not in public:
                yield node.lineno, f"from {module} import ... ({module} is internal)"
                continue
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                if alias.name not in public[module] and submodule not in public:
                    yield node.lineno, f"from {module} import {alias.name} (not in __all__)"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tollway.") and alias.name not in public:
                    yield node.lineno, f"import {alias.name} ({alias.name} is internal)"


def test_plugins_import_only_public_names() -> None:
    public = _public_names()
    found = [
        f"{where}:{line}: {what}"
        for where, source in _plugin_sources()
        for line, what in violations(source, public)
    ]
    assert not found, "plugins import internal names:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from tollway import Gateway", []),
        ("from tollway import Pipeline", ["from tollway import Pipeline (not in __all__)"]),
        ("from tollway.pipeline import Gate", ["from tollway.pipeline import ... "]),
        ("import tollway.db.models", ["import tollway.db.models (tollway.db.models is"]),
        ("from tollway.testing import GatewayFactory", []),
        ("from tollway import testing", []),
        ("from tollway_chat import schemas\nimport litestar", []),
    ],
)
def test_the_check_tells_public_from_internal(source: str, expected: list[str]) -> None:
    found = [what for _, what in violations(source, _public_names())]
    assert len(found) == len(expected)
    for what, start in zip(found, expected, strict=True):
        assert what.startswith(start)


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_name_exists(module: str) -> None:
    loaded = importlib.import_module(module)
    missing = [name for name in loaded.__all__ if not hasattr(loaded, name)]
    assert not missing
