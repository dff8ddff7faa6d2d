"""Chat across processes, over real HTTP (PostgreSQL for the data, Redis between the
processes): a live_chat token issued by one gateway opens a stream on another and a
message sent through one reaches the stream held by the other; sends accepted by a
gateway are made by ``tollway worker`` processes, and one cut off by a killed worker
is finished by another."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller
from chat_client import CHAT, inbox, tenant
from mail_server import Mailbox, SmtpServer

from tollway import Database
from tollway.testing import (
    Backend,
    GatewayFactory,
    GatewayProcess,
    WorkerProcess,
    deployment_settings,
    free_port,
)
from tollway_chat.models import Message


async def _next_event(lines: AsyncIterator[str]) -> dict[str, str]:
    fields: dict[str, str] = {}
    async for line in lines:
        if not line:
            if fields:
                return fields
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        fields[name] = value.removeprefix(" ")
    raise AssertionError("the stream ended")


async def test_live_chat_crosses_processes(
    backend: Backend, gateway_factory: GatewayFactory, tmp_path: Path
) -> None:
    if backend.redis_url is None:
        pytest.skip("several processes need the scale-out profile (PostgreSQL and Redis)")
    gateway = await gateway_factory(plugins=["chat"], isolated=True)
    owner = await tenant(gateway, "acme")
    box = await inbox(gateway, owner, "Website", channel="live_chat")
    # The same database, Redis and real-time bus channels (live_channel_prefix).
    settings = deployment_settings(gateway)
    # The second process never polls for deliveries after its first pass, so the
    # message posted to the first is sent by the first, to a stream the second holds.
    idle = tmp_path / "idle.toml"
    idle.write_text("[products.chat.settings]\ndelivery_poll_interval = 3600\n")
    with (
        GatewayProcess(plugins=["chat"], **settings) as first,
        GatewayProcess(plugins=["chat"], config=idle, **settings) as second,
    ):
        async with httpx.AsyncClient(timeout=10, headers=owner.headers) as client:
            agent = await client.post(
                f"{first.url}{CHAT}/agents", json={"name": "Grace", "email": "g@support.example"}
            )
            assert agent.status_code == 201, agent.text
            contact = (
                await client.post(
                    f"{first.url}{CHAT}/contacts", json={"name": "Ada", "email": "ada@example.com"}
                )
            ).json()
            conversation = (
                await client.post(
                    f"{first.url}{CHAT}/conversations",
                    json={"inbox_id": box, "contact_id": contact["id"]},
                )
            ).json()
            issued = await client.post(f"{first.url}{CHAT}/contacts/{contact['id']}/stream-token")
            token = issued.json()["token"]
            async with (
                httpx.AsyncClient(timeout=10) as browser,
                browser.stream(
                    "GET", f"{second.url}{CHAT}/stream", params={"token": token, "max_seconds": 30}
                ) as stream,
            ):
                assert stream.status_code == 200
                lines = stream.aiter_lines()
                assert (await asyncio.wait_for(_next_event(lines), 10))["event"] == "ready"
                sent = await client.post(
                    f"{first.url}{CHAT}/conversations/{conversation['id']}/messages",
                    json={"content": "Hello from the other process"},
                )
                assert sent.status_code == 201, sent.text
                event = await asyncio.wait_for(_next_event(lines), 10)
                assert event["event"] == "message"
                assert event["id"] == str(sent.json()["id"])
                assert json.loads(event["data"])["content"] == "Hello from the other process"
                # Ada answers through the first process with the same token.
                answered = await browser.post(
                    f"{first.url}{CHAT}/stream/messages",
                    json={"content": "Thanks!"},
                    params={"token": token},
                )
                assert answered.status_code == 201, answered.text
            messages = await client.get(
                f"{second.url}{CHAT}/conversations/{conversation['id']}/messages"
            )
            assert [(m["type"], m["content"]) for m in messages.json()["data"]] == [
                ("outgoing", "Hello from the other process"),
                ("incoming", "Thanks!"),
            ]


class HangingFirstSend(Mailbox):
    """Accepts mail, except that the first DATA hangs (a send in flight when its
    worker dies) and is never accepted."""

    def __init__(self) -> None:
        super().__init__()
        self.first_send_started = threading.Event()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if not self.first_send_started.is_set():
            self.first_send_started.set()
            await asyncio.sleep(60)
            return "451 try again later"
        return await super().handle_DATA(server, session, envelope)


async def _scale_out(
    backend: Backend, gateway_factory: GatewayFactory, tmp_path: Path, smtp_port: int
) -> tuple[Any, int, str, dict[str, Any]]:
    """An email conversation in an isolated PostgreSQL database, and the settings and
    config file of processes that serve it, with workers on a queue of their own."""
    if backend.redis_url is None:
        pytest.skip("workers need the scale-out profile (PostgreSQL and Redis)")
    gateway = await gateway_factory(plugins=["chat"], isolated=True)
    owner = await tenant(gateway, "acme")
    mail = await inbox(gateway, owner, "Mail", channel="email")
    config = tmp_path / "chat.toml"
    config.write_text(
        "[products.chat.settings]\n"
        f'smtp_host = "127.0.0.1"\nsmtp_port = {smtp_port}\n'
        "delivery_retry_schedule = [600]\n"
    )
    settings = {**deployment_settings(gateway), "job_heartbeat": 2, "config": config}
    return owner, mail, gateway.settings.database_url, settings


async def _send_email(url: str, owner: Any, mail: int, content: str) -> int:
    async with httpx.AsyncClient(base_url=f"{url}{CHAT}", headers=owner.headers) as client:
        await client.post("/agents", json={"name": "Grace", "email": "g@support.example"})
        contact = await client.post("/contacts", json={"name": "Ada", "email": "ada@example.com"})
        conversation = await client.post(
            "/conversations", json={"inbox_id": mail, "contact_id": contact.json()["id"]}
        )
        sent = await client.post(
            f"/conversations/{conversation.json()['id']}/messages", json={"content": content}
        )
        assert sent.status_code == 201, sent.text
        return int(sent.json()["id"])


async def _delivery(database_url: str, message_id: int) -> tuple[str | None, int]:
    database = Database(database_url)
    try:
        async with database.transaction() as session:
            message = await session.get(Message, message_id)
            assert message is not None
            return message.delivery_status, message.delivery_attempts
    finally:
        await database.dispose()


async def test_a_worker_process_sends_what_a_gateway_process_accepted(
    backend: Backend, gateway_factory: GatewayFactory, tmp_path: Path
) -> None:
    smtp = SmtpServer(free_port())
    smtp.start()
    try:
        owner, mail, database_url, settings = await _scale_out(
            backend, gateway_factory, tmp_path, smtp.port
        )
        with GatewayProcess(plugins=["chat"], run_jobs=False, **settings) as gateway:
            message_id = await _send_email(gateway.url, owner, mail, "Sent by a worker")
            await asyncio.sleep(1)
            # Accepted and queued, but no process works jobs yet.
            assert smtp.mailbox.envelopes == []
            assert await _delivery(database_url, message_id) == ("pending", 0)
            with WorkerProcess(plugins=["chat"], **settings):
                deadline = time.monotonic() + 20
                while not smtp.mailbox.envelopes:
                    assert time.monotonic() < deadline, "the worker sent nothing"
                    await asyncio.sleep(0.1)
        assert await _delivery(database_url, message_id) == ("sent", 1)
        assert b"Sent by a worker" in smtp.mailbox.envelopes[0].content
    finally:
        smtp.stop()


async def test_a_send_cut_off_by_a_killed_worker_is_finished_by_another(
    backend: Backend, gateway_factory: GatewayFactory, tmp_path: Path
) -> None:
    smtp = SmtpServer(free_port())
    smtp.mailbox = HangingFirstSend()
    smtp.controller = Controller(smtp.mailbox, hostname="127.0.0.1", port=smtp.port)
    smtp.start()
    try:
        owner, mail, database_url, settings = await _scale_out(
            backend, gateway_factory, tmp_path, smtp.port
        )
        with GatewayProcess(plugins=["chat"], run_jobs=False, **settings) as gateway:
            doomed = WorkerProcess(plugins=["chat"], **settings).start()
            message_id = await _send_email(gateway.url, owner, mail, "Survives a crash")
            started = await asyncio.to_thread(smtp.mailbox.first_send_started.wait, 20)
            assert started, "the first worker never began the send"
            doomed.kill()  # SIGKILL, mid-send: no clean-up runs
            with WorkerProcess(plugins=["chat"], **settings):
                deadline = time.monotonic() + 40
                while not smtp.mailbox.envelopes:
                    assert time.monotonic() < deadline, "nobody finished the send"
                    await asyncio.sleep(0.1)
                await asyncio.sleep(1)
        assert len(smtp.mailbox.envelopes) == 1
        assert await _delivery(database_url, message_id) == ("sent", 1)
    finally:
        smtp.stop()
