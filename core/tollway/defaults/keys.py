"""Default key authenticator: hashed keys in the database, cached for a second."""

from __future__ import annotations

from tollway.auth import DatabaseKeyAuthenticator, KeyAuthenticator
from tollway.gateway import Gateway
from tollway.hookspecs import hookimpl


@hookimpl(trylast=True)
def tollway_key_authenticator(gateway: Gateway) -> KeyAuthenticator:
    return DatabaseKeyAuthenticator(gateway.database, ttl=gateway.settings.key_cache_ttl)
