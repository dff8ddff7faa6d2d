"""Deployment secrets: made once, the same on every process, whoever asks first."""

from __future__ import annotations

import asyncio

from tollway import Gateway
from tollway.secrets import deployment_secret
from tollway.testing import GatewayFactory


async def test_every_process_reads_the_same_secret(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory()
    peers = [gateway, *(Gateway(gateway.settings) for _ in range(3))]
    try:
        values = await asyncio.gather(
            *(deployment_secret(peer.database, "racing") for peer in peers for _ in range(3))
        )
        assert len(set(values)) == 1
        assert len(values[0]) >= 40  # 32 random bytes, URL-safe base64
        again = await deployment_secret(Gateway(gateway.settings).database, "racing")
        assert again == values[0]
        assert await deployment_secret(gateway.database, "another") != values[0]
    finally:
        for peer in peers[1:]:
            await peer.database.dispose()
