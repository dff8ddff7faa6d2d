"""Fixtures for the webhook endpoint tests: the core's HTTPS receiver on loopback
(``webhook_receiver`` in ``tollway.testing``), which checks every delivery with the
public ``tollway.webhooks.WebhookReceiver``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tollway.testing import WebhookTestReceiver


@pytest.fixture
def certificate(webhook_certificate: tuple[Path, Path]) -> tuple[Path, Path]:
    return webhook_certificate


@pytest.fixture
def receiver(webhook_receiver: WebhookTestReceiver) -> WebhookTestReceiver:
    return webhook_receiver
