"""Default scope checker: exact match."""

from __future__ import annotations

from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl
from tollway.scopes import ExactScopeChecker, ScopeChecker


@hookimpl(trylast=True)
def tollway_scope_checker(gateway: Gateway) -> ScopeChecker:
    return ExactScopeChecker()
