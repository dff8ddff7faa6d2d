"""Default scope checker: a scope is granted by itself or by a scope registered as
granting it."""

from __future__ import annotations

from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl
from tollway.scopes import RegisteredScopeChecker, ScopeChecker


@hookimpl(trylast=True)
def tollway_scope_checker(gateway: Gateway) -> ScopeChecker:
    return RegisteredScopeChecker(gateway.registry.granted_by())
