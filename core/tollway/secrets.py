"""Secrets a deployment makes for itself, once, and shares across its processes.

A product that signs something one process issues and another checks (a stream token,
a result URL) needs the same key on every process. An operator may configure one; when
they don't, :func:`deployment_secret` makes a random one the first time it is asked
for and stores it in the database, so every process of the deployment reads the same.
"""

from __future__ import annotations

import base64
import hmac
import secrets

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from tollway.db import Database
from tollway.db.models import DeploymentSecret


async def deployment_secret(database: Database, name: str, *, nbytes: int = 32) -> str:
    """The deployment's secret ``name``, made on first use (race-free across processes:
    the first insert wins, the others read it)."""
    async with database.transaction() as session:
        value = await session.scalar(
            select(DeploymentSecret.value).where(DeploymentSecret.name == name)
        )
    if value is not None:
        return value
    try:
        async with database.transaction() as session:
            session.add(DeploymentSecret(name=name, value=secrets.token_urlsafe(nbytes)))
    except IntegrityError:
        pass
    async with database.transaction() as session:
        stored = await session.scalar(
            select(DeploymentSecret.value).where(DeploymentSecret.name == name)
        )
    assert stored is not None
    return stored


def signature(key: bytes, *parts: object) -> str:
    """HMAC-SHA256 under ``key`` of ``parts`` joined by dots, as unpadded URL-safe
    base64 (43 characters): what a signed URL or token carries. Compare with
    :func:`hmac.compare_digest`."""
    message = ".".join(str(part) for part in parts).encode()
    digest = hmac.digest(key, message, "sha256")
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")
