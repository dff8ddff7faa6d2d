"""Resolving a customer's host for an outbound call, without asking a DNS server.

Nothing resolves DNS on the test machines, and a resolver that takes its time to say
no made a test with a 0.5 s fetch budget flaky; so these tests replace the loop's
``getaddrinfo`` and check what the gateway does with each answer.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from tollway.webhooks.ssrf import UnsafeURLError, never_resolves, resolve


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names looked up; every lookup answers as a resolver without the name does."""
    asked: list[str] = []

    async def getaddrinfo(self: Any, host: str, port: int, **kwargs: Any) -> Any:
        asked.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", getaddrinfo)
    return asked


@pytest.mark.parametrize("host", ["nowhere.invalid", "A.B.INVALID.", "invalid"])
async def test_invalid_names_are_refused_without_a_lookup(lookups: list[str], host: str) -> None:
    with pytest.raises(UnsafeURLError, match="does not resolve"):
        await resolve(host, 443)
    assert lookups == []


@pytest.mark.parametrize("host", ["invalid.example.com", "notinvalid", "example.invalid.org"])
def test_only_the_invalid_domain_never_resolves(host: str) -> None:
    assert not never_resolves(host)


async def test_a_name_the_resolver_does_not_know_is_refused(lookups: list[str]) -> None:
    with pytest.raises(UnsafeURLError, match=r"does not resolve: .*not known"):
        await resolve("hooks.example.com", 443)
    assert lookups == ["hooks.example.com"]


async def test_a_name_with_one_internal_address_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def getaddrinfo(self: Any, host: str, port: int, **kwargs: Any) -> Any:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port)),
        ]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", getaddrinfo)
    with pytest.raises(UnsafeURLError, match=r"resolves to 10\.0\.0\.7, a private address"):
        await resolve("mixed.example.com", 443)
    assert await resolve("mixed.example.com", 443, allow_private=True) == [
        "93.184.215.14",
        "10.0.0.7",
    ]
