"""Delivery survives the process: pending sends live in the database under a lease.

A message whose send failed is retried by the next gateway to start; a lease left by
a process that died mid-send lapses and the message is sent by another; several
processes polling the same database send each message once.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import httpx
from chat_client import CHAT, inbox, tenant
from mail_server import SmtpServer, chat_settings
from sqlalchemy import select

from tollway import Gateway, utcnow
from tollway.testing import GatewayFactory, Tenant, free_port, gateway_client
from tollway_chat.models import Message


async def _message(gateway: Gateway, message_id: int) -> Message:
    async with gateway.database.transaction() as session:
        message = await session.scalar(select(Message).where(Message.id == message_id))
        assert message is not None
        return message


async def _email_thread(gateway: Gateway, client: httpx.AsyncClient, owner: Tenant) -> str:
    """An email conversation of ``owner``'s; the path of its messages."""
    mail = await inbox(gateway, owner, "Mail", channel="email")
    for path, body in (
        ("/agents", {"name": "Grace", "email": "grace@support.example"}),
        ("/contacts", {"name": "Ada", "email": "ada@example.com"}),
    ):
        response = await client.post(f"{CHAT}{path}", json=body, headers=owner.headers)
        assert response.status_code == 201, response.text
    conversation = await client.post(
        f"{CHAT}/conversations",
        json={"inbox_id": mail, "contact_id": response.json()["id"]},
        headers=owner.headers,
    )
    return f"{CHAT}/conversations/{conversation.json()['id']}/messages"


async def test_a_pending_send_is_retried_by_the_next_process(
    gateway_factory: GatewayFactory,
) -> None:
    server = SmtpServer(free_port())
    products = chat_settings(server.port, delivery_retry_schedule=[0.3, 0.3, 0.3])
    first = await gateway_factory(plugins=["chat"], products=products)
    owner = await tenant(first, "acme")
    async with gateway_client(first) as client:
        path = await _email_thread(first, client, owner)
        sent = await client.post(path, json={"content": "Still there?"}, headers=owner.headers)
        message_id = sent.json()["id"]
        deadline = time.monotonic() + 5
        while (await _message(first, message_id)).delivery_attempts < 1:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
    # The first process is gone (its lifespan ended) with the message still pending.
    assert (await _message(first, message_id)).delivery_status == "pending"
    server.start()
    try:
        second = Gateway(first.settings)
        async with gateway_client(second):
            deadline = time.monotonic() + 10
            while (message := await _message(second, message_id)).delivery_status == "pending":
                assert time.monotonic() < deadline, "the restarted gateway did not send it"
                await asyncio.sleep(0.05)
        assert (message.delivery_status, message.delivery_attempts) == ("sent", 2)
        assert len(server.mailbox.envelopes) == 1
    finally:
        server.stop()


async def test_a_lapsed_lease_of_a_dead_process_is_taken_over(
    gateway_factory: GatewayFactory, smtp_server: SmtpServer
) -> None:
    products = chat_settings(smtp_server.port, delivery_poll_interval=0.1)
    gateway = await gateway_factory(plugins=["chat"], products=products)
    owner = await tenant(gateway, "acme")
    async with gateway_client(gateway) as client:
        path = await _email_thread(gateway, client, owner)
        # As a process that claimed the message and died mid-send leaves it: leased to a
        # token nobody holds. Written before the message is due, so no poll races it.
        async with gateway.database.transaction() as session:
            message = Message(
                account_id=owner.account_id,
                conversation_id=int(path.split("/")[4]),
                type="outgoing",
                content="orphaned",
                private=False,
                delivery_status="pending",
                delivery_attempts=0,
                delivery_due_at=utcnow(),
                delivery_lease_until=utcnow() + timedelta(seconds=1),
                delivery_lease_token="f" * 32,
            )
            session.add(message)
        await asyncio.sleep(0.5)
        assert smtp_server.mailbox.envelopes == []  # the lease still holds
        deadline = time.monotonic() + 10
        while (stored := await _message(gateway, message.id)).delivery_status == "pending":
            assert time.monotonic() < deadline, "the lapsed lease was never taken over"
            await asyncio.sleep(0.05)
        assert (stored.delivery_status, stored.delivery_attempts) == ("sent", 1)
        assert [b"orphaned" in envelope.content for envelope in smtp_server.mailbox.envelopes] == [
            True
        ]


async def test_processes_sharing_a_database_send_each_message_once(
    gateway_factory: GatewayFactory, smtp_server: SmtpServer
) -> None:
    products = chat_settings(smtp_server.port, delivery_poll_interval=0.05)
    gateway = await gateway_factory(plugins=["chat"], products=products)
    owner = await tenant(gateway, "acme")
    peers = [Gateway(gateway.settings) for _ in range(2)]
    async with gateway_client(gateway) as client:
        path = await _email_thread(gateway, client, owner)
        async with gateway_client(peers[0]), gateway_client(peers[1]):
            sent = await asyncio.gather(
                *(
                    client.post(path, json={"content": f"message {n}"}, headers=owner.headers)
                    for n in range(30)
                )
            )
            ids = [response.json()["id"] for response in sent]
            deadline = time.monotonic() + 20
            while len(smtp_server.mailbox.envelopes) < 30:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
    assert len(smtp_server.mailbox.envelopes) == 30
    for message_id in ids:
        message = await _message(gateway, message_id)
        assert (message.delivery_status, message.delivery_attempts) == ("sent", 1)
