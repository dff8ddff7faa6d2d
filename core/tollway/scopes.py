"""Scope checking: does a key's set of scopes grant the scope an endpoint requires?"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class ScopeChecker(Protocol):
    def grants(self, held: frozenset[str], required: str) -> bool:
        """Whether a key holding ``held`` may call an endpoint requiring ``required``."""
        ...


class RegisteredScopeChecker:
    """A scope is granted by itself, or by a scope registered as granting it
    (``register("orders:read", ..., grants=("pos:orders:read",))``): least privilege,
    no wildcards; what a broad scope grants is declared, never inferred from its name."""

    def __init__(self, granted_by: Mapping[str, frozenset[str]]) -> None:
        self._granted_by = dict(granted_by)
        """Required scope -> the broader scopes granting it, when it has any."""

    def grants(self, held: frozenset[str], required: str) -> bool:
        if required in held:
            return True
        granting = self._granted_by.get(required)
        return granting is not None and not held.isdisjoint(granting)
