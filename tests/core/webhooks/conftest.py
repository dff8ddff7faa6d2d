"""Fixtures for the webhook engine tests: a TLS receiver and a shop plugin emitting."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tollway import Gateway, hookimpl
from tollway.testing import GatewayFactory
from tollway.webhooks.testing import WebhookGateway, WebhookTestReceiver

FAST = {
    "webhooks_allow_private_addresses": True,
    "webhooks_poll_interval": 0.05,
    "webhooks_timeout": 2.0,
    "webhooks_retry_schedule": [0, 0.1, 0.1, 0.1],
}


class ShopPlugin:
    """A product that emits order events."""

    @hookimpl
    def tollway_register_events(self, register: Callable[[str, str], None]) -> None:
        register("order.created", "An order was placed")
        register("order.paid", "An order was paid")


@pytest.fixture
def receiver(webhook_receiver: WebhookTestReceiver) -> WebhookTestReceiver:
    return webhook_receiver


@pytest.fixture
async def webhook_gateway(
    gateway_factory: GatewayFactory, webhook_certificate: tuple[Path, Path]
) -> AsyncIterator[WebhookGateway]:
    """``await webhook_gateway(start=True, **settings)``: a gateway with the shop
    plugin, trusting the receiver's certificate, on short timings; stopped afterwards.
    ``same_database_as=gateway`` builds another process's gateway on that database."""
    made: list[Gateway] = []

    async def make(
        *, start: bool = True, same_database_as: Gateway | None = None, **settings: Any
    ) -> Gateway:
        options = {**FAST, "webhooks_ca_file": str(webhook_certificate[0]), **settings}
        if same_database_as is None:
            gateway = await gateway_factory(
                plugins=[], extra_plugins=[("shop", ShopPlugin())], **options
            )
        else:
            base = same_database_as.settings
            gateway = Gateway(
                msgspec.structs.replace(base, **options), extra_plugins=[("shop", ShopPlugin())]
            )
        made.append(gateway)
        if start:
            await gateway.start()
        return gateway

    yield make
    for gateway in made:
        await gateway.stop()  # also fine for one stopped by the test, or never started
