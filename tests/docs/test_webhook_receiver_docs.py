"""The receiver examples in docs/webhooks.md verify a real delivery from the engine."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tollway import Gateway, hookimpl
from tollway.testing import GatewayFactory, unavailable
from tollway.webhooks.testing import WebhookTestReceiver

PAGE = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def example(name: str) -> str:
    match = re.search(
        rf"<!-- example: {name} -->\n```\w+\n(.*?)```", PAGE.read_text(), flags=re.DOTALL
    )
    assert match, f"docs/webhooks.md has no '{name}' example"
    return match.group(1)


class Shop:
    @hookimpl
    def tollway_register_events(self, register: Any) -> None:
        register("shop.order_placed", "An order was placed")


async def _a_delivery(
    factory: GatewayFactory, receiver: WebhookTestReceiver, certificate: tuple[Path, Path]
) -> tuple[str, bytes, dict[str, str]]:
    gateway: Gateway = await factory(
        plugins=[],
        extra_plugins=[("shop", Shop())],
        webhooks_allow_private_addresses=True,
        webhooks_ca_file=str(certificate[0]),
    )
    account = await gateway.accounts.create_account("shop")
    endpoint, secret = await gateway.webhooks.register_endpoint(
        account, receiver.url(), ["shop.order_placed"]
    )
    receiver.trust(secret)
    result = await gateway.webhooks.send_test(account, endpoint.id)
    assert result is not None
    assert result.succeeded
    [request] = receiver.requests
    return secret, request.body, request.headers


async def test_the_python_examples_verify_a_real_delivery(
    gateway_factory: GatewayFactory,
    webhook_receiver: WebhookTestReceiver,
    webhook_certificate: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret, body, headers = await _a_delivery(
        gateway_factory, webhook_receiver, webhook_certificate
    )
    monkeypatch.setenv("WEBHOOK_SECRET", secret)
    helper: dict[str, Any] = {}
    exec(example("python-helper"), helper)
    assert helper["handle_delivery"](body, headers) == 200
    assert helper["handle_delivery"](body, headers) == 200  # a duplicate is acknowledged
    assert helper["handle_delivery"](body + b" ", headers) == 400

    stdlib: dict[str, Any] = {}
    exec(example("python-stdlib"), stdlib)
    header = headers["X-Service-Signature"]
    assert stdlib["signature_is_valid"](secret, body, header)
    assert not stdlib["signature_is_valid"](secret, body.replace(b"webhook", b"webhooK"), header)
    assert not stdlib["signature_is_valid"]("whsec_wrong", body, header)


async def test_the_openssl_example_prints_the_signature(
    gateway_factory: GatewayFactory,
    webhook_receiver: WebhookTestReceiver,
    webhook_certificate: tuple[Path, Path],
    tmp_path: Path,
) -> None:
    if shutil.which("openssl") is None:
        unavailable("openssl is not installed")
    secret, body, headers = await _a_delivery(
        gateway_factory, webhook_receiver, webhook_certificate
    )
    (tmp_path / "body.json").write_bytes(body)
    shell = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        example("openssl"),
        cwd=tmp_path,
        env={**os.environ, "WEBHOOK_SECRET": secret},
        stdout=asyncio.subprocess.PIPE,
    )
    printed, _ = await shell.communicate()
    assert shell.returncode == 0
    assert printed.decode().strip() == headers["X-Service-Signature"]
