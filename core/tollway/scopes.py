"""Scope checking: does a key's set of scopes grant the scope an endpoint requires?"""

from __future__ import annotations

from typing import Protocol


class ScopeChecker(Protocol):
    def grants(self, held: frozenset[str], required: str) -> bool:
        """Whether a key holding ``held`` may call an endpoint requiring ``required``."""
        ...


class ExactScopeChecker:
    """A scope is granted only by itself: least privilege, no wildcards."""

    def grants(self, held: frozenset[str], required: str) -> bool:
        return required in held
