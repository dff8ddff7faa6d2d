"""``[products.chat.settings]`` is checked when the gateway starts: defaults as
operations.md documents them, and a wrong, impossible or unknown key refused then."""

from __future__ import annotations

from typing import Any

import pytest

from tollway.testing import GatewayFactory
from tollway_chat.settings import ChatSettings


def test_defaults() -> None:
    settings = ChatSettings()
    assert (settings.smtp_host, settings.smtp_port, settings.smtp_from) == (
        None,
        25,
        "chat@localhost",
    )
    assert (settings.smtp_starttls, settings.smtp_timeout) == (False, 10)
    assert settings.delivery_retry_schedule == (1, 5, 30, 120, 600)
    assert settings.delivery_poll_interval == 2
    assert (settings.stream_secret, settings.stream_token_ttl) == (None, 900)
    assert settings.stream_max_seconds == 3600


async def test_the_gateway_reads_them_typed(gateway_factory: GatewayFactory) -> None:
    # As a config file or the environment gives them: numbers may come as text.
    products = {"chat": {"settings": {"smtp_port": "2525", "delivery_retry_schedule": [0, "1.5"]}}}
    gateway = await gateway_factory(plugins=["chat"], products=products)
    settings = gateway.product_settings(ChatSettings)
    assert (settings.smtp_port, settings.delivery_retry_schedule) == (2525, (0, 1.5))


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"smtp_hots": "mail.example"}, "smtp_hots"),
        ({"smtp_port": "twenty-five"}, "smtp_port"),
        ({"smtp_port": 0}, "smtp_port"),
        ({"delivery_retry_schedule": [1, -1]}, "delivery_retry_schedule"),
        ({"delivery_poll_interval": 0}, "delivery_poll_interval"),
        ({"stream_token_ttl": -1}, "stream_token_ttl"),
    ],
)
async def test_a_wrong_setting_fails_start_up(
    gateway_factory: GatewayFactory, settings: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=r"\[products\.chat\.settings\]") as refused:
        await gateway_factory(plugins=["chat"], products={"chat": {"settings": settings}})
    assert named in str(refused.value)
