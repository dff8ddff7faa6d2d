"""What a user installing one tollway distribution gets: the licence, a build backend
that reads its metadata, and a declared dependency for every package its code imports.

Each distribution is checked from its own pyproject.toml, against the import
statements of the packages it ships, so a plugin cannot lean on what the core happens
to install today.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parents[2]
PROJECTS = [
    ROOT,
    *sorted(path.parent for path in ROOT.glob("plugins/*/pyproject.toml")),
    ROOT / "harness",
]
PROVIDERS = importlib.metadata.packages_distributions()
TYPE_CHECKING = ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _pyproject(project: Path) -> dict[str, Any]:
    return tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))


def _name(project: Path) -> str:
    return str(_pyproject(project)["project"]["name"])


def _packages(project: Path) -> list[Path]:
    """The top-level import packages the distribution ships."""
    if project == ROOT:
        return [ROOT / "core" / "tollway"]
    return sorted(path.parent for path in project.glob("tollway_*/__init__.py"))


def _declared(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(requirement).name) for requirement in requirements}


def _runtime_imports(node: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, top-level name) of every absolute import, skipping ``if TYPE_CHECKING:``
    blocks: those name packages for the type checker, never for an installed program."""
    if isinstance(node, ast.If) and ast.unparse(node.test) in TYPE_CHECKING:
        children: list[ast.AST] = [*node.orelse]
    else:
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name.partition(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.partition(".")[0]
        children = [*ast.iter_child_nodes(node)]
    for child in children:
        yield from _runtime_imports(child)


def _is_pytest_plugin(module: Path, package: Path, pytest_plugins: set[str]) -> bool:
    """Whether ``module`` is (or belongs to) a module the distribution registers as a
    pytest plugin: only pytest loads those, so they may use the ``test`` extra."""
    parts = module.relative_to(package.parent).with_suffix("").parts
    dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return any(dotted == name or dotted.startswith(f"{name}.") for name in pytest_plugins)


def _undeclared(project: Path) -> dict[str, str]:
    """Each installed distribution the project's code imports without declaring it,
    with the first place that imports it."""
    metadata = _pyproject(project)["project"]
    own = canonicalize_name(metadata["name"])
    runtime = _declared(metadata.get("dependencies", []))
    with_tests = runtime | _declared(metadata.get("optional-dependencies", {}).get("test", []))
    pytest_plugins = set(metadata.get("entry-points", {}).get("pytest11", {}).values())
    missing: dict[str, str] = {}
    for package in _packages(project):
        for module in sorted(package.rglob("*.py")):
            allowed = with_tests if _is_pytest_plugin(module, package, pytest_plugins) else runtime
            tree = ast.parse(module.read_text(encoding="utf-8"))
            for line, name in _runtime_imports(tree):
                if name in sys.stdlib_module_names:
                    continue
                providers = {canonicalize_name(dist) for dist in PROVIDERS.get(name, [])}
                if own in providers or providers & allowed:
                    continue
                place = f"{module.relative_to(ROOT)}:{line} imports {name}"
                missing.setdefault(" or ".join(sorted(providers)) or "not installed", place)
    return missing


@pytest.mark.parametrize("project", PROJECTS, ids=_name)
def test_every_imported_package_is_declared_by_the_distribution(project: Path) -> None:
    assert _undeclared(project) == {}


@pytest.mark.parametrize("project", PROJECTS, ids=_name)
def test_the_distribution_ships_the_licence_with_a_backend_that_reads_it(
    project: Path,
) -> None:
    pyproject = _pyproject(project)
    [setuptools] = [
        Requirement(requirement)
        for requirement in pyproject["build-system"]["requires"]
        if Requirement(requirement).name == "setuptools"
    ]
    # `license = "MIT"` (PEP 639) is an error before setuptools 77.
    assert not setuptools.specifier.contains("76.1")
    assert pyproject["project"]["license"] == "MIT"
    assert pyproject["project"]["license-files"] == ["LICENSE"]
    licence = (project / "LICENSE").read_text(encoding="utf-8")
    assert licence == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Copyright (c) 2026 the tollway authors" in licence


@pytest.mark.parametrize("project", PROJECTS[1:], ids=_name)
def test_tollway_distributions_are_required_within_one_release_series(project: Path) -> None:
    """A plugin built against tollway 0.1 must not be installed next to a tollway 0.2
    whose public front it was never tested with."""
    requirements = [
        Requirement(requirement)
        for requirement in _pyproject(project)["project"].get("dependencies", [])
    ]
    for requirement in requirements:
        if canonicalize_name(requirement.name).startswith("tollway"):
            assert requirement.specifier.contains("0.1.0"), requirement
            assert not requirement.specifier.contains("0.2.0"), requirement
