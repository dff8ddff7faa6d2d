"""Webhook endpoints over HTTP: registration rules, secrets shown once, test events,
deliveries, redelivery and secret rotation against a real HTTPS receiver."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from developer_accounts import Tenant, tenant

from tollway import EVENT_HEADER, SIGNATURE_HEADER, Gateway, hookimpl, verify_signature
from tollway.testing import GatewayFactory, Reply, WebhookTestReceiver, gateway_client

WEBHOOKS = "/v1/developer/webhooks"


class ShopEvents:
    """Registers the events the endpoints subscribe to."""

    @hookimpl
    def tollway_register_events(self, register: Callable[[str, str], None]) -> None:
        register("order.created", "An order was placed")
        register("order.paid", "An order was paid")


async def _gateway(
    factory: GatewayFactory, certificate: tuple[Path, Path] | None = None
) -> Gateway:
    """With a certificate: a gateway that trusts it and may call loopback receivers."""
    settings: dict[str, Any] = {}
    if certificate is not None:
        settings = {
            "webhooks_allow_private_addresses": True,
            "webhooks_ca_file": str(certificate[0]),
            "webhooks_poll_interval": 0.05,
            "webhooks_timeout": 2.0,
        }
    return await factory(plugins=["developer"], extra_plugins=[("shop", ShopEvents())], **settings)


async def _register(
    client: httpx.AsyncClient, owner: Tenant, receiver: WebhookTestReceiver, **fields: Any
) -> dict[str, Any]:
    body = {"url": receiver.url(), "events": ["order.created"], **fields}
    response = await client.post(WEBHOOKS, json=body, headers=owner.headers)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    receiver.trust(created["secret"])
    return created


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"url": "http://example.com/hook"}, "https://"),
        ({"url": "https://10.1.2.3/hook"}, "10.1.2.3, a private address"),
        ({"url": "https://127.0.0.1:8443/hook"}, "a loopback address"),
        ({"url": "https://localhost/hook"}, "a loopback address"),
        ({"url": "https://169.254.169.254/latest"}, "cloud metadata"),
        ({"url": "https://user:pw@example.com/hook"}, "credentials"),
        ({"url": "https://no-such-host.invalid/hook"}, "does not resolve"),
        ({"events": ["order.created", "order.shipped"]}, "unknown event(s): order.shipped"),
        ({"events": []}, "events"),
        ({"events": "order.created"}, "events"),
        ({"url": None}, "url"),
        ({"description": "a\x00b"}, "NUL"),
        ({"description": "x" * 501}, "description"),
    ],
    ids=[
        "http",
        "private-ip",
        "loopback-ip",
        "localhost",
        "metadata",
        "credentials",
        "unresolvable",
        "unknown-event",
        "no-events",
        "events-not-a-list",
        "no-url",
        "nul",
        "long-description",
    ],
)
async def test_bad_registrations_are_400_saying_why(
    gateway_factory: GatewayFactory, body: dict[str, Any], message: str
) -> None:
    gateway = await _gateway(gateway_factory)
    owner = await tenant(gateway)
    request = {"url": "https://93.184.215.14/hook", "events": ["order.created"], **body}
    async with gateway_client(gateway) as client:
        response = await client.post(WEBHOOKS, json=request, headers=owner.headers)
        listed = await client.get(WEBHOOKS, headers=owner.headers)
    assert response.status_code == 400
    assert message in response.json()["detail"]
    assert listed.json()["total"] == 0


async def test_the_secret_is_shown_once_and_endpoints_can_be_removed(
    gateway_factory: GatewayFactory, certificate: tuple[Path, Path], receiver: WebhookTestReceiver
) -> None:
    gateway = await _gateway(gateway_factory, certificate)
    owner = await tenant(gateway)
    async with gateway_client(gateway) as client:
        created = await _register(
            client, owner, receiver, events=["order.paid", "order.created"], description="sync"
        )
        listed = await client.get(WEBHOOKS, headers=owner.headers)
        removed = await client.delete(f"{WEBHOOKS}/{created['id']}", headers=owner.headers)
        relisted = await client.get(WEBHOOKS, headers=owner.headers)
        again = await client.delete(f"{WEBHOOKS}/{created['id']}", headers=owner.headers)
        tested = await client.post(f"{WEBHOOKS}/{created['id']}/test", headers=owner.headers)

    secret = created.pop("secret")
    assert secret.startswith(created["secret_prefix"])
    assert created["url"] == receiver.url()
    assert created["events"] == ["order.paid", "order.created"]
    assert (created["description"], created["is_active"]) == ("sync", True)
    assert created["disabled_reason"] is None
    assert listed.json() == {"data": [created], "total": 1, "page": 1}
    assert secret not in listed.text
    assert removed.status_code == 204
    assert relisted.json() == {"data": [], "total": 0, "page": 1}
    assert again.status_code == 404
    assert again.json() == {"detail": f"Webhook endpoint {created['id']} not found"}
    assert tested.status_code == 404


async def test_a_test_event_is_signed_delivered_and_logged(
    gateway_factory: GatewayFactory, certificate: tuple[Path, Path], receiver: WebhookTestReceiver
) -> None:
    gateway = await _gateway(gateway_factory, certificate)
    owner = await tenant(gateway)
    async with gateway_client(gateway) as client:
        endpoint = await _register(client, owner, receiver)
        tested = await client.post(f"{WEBHOOKS}/{endpoint['id']}/test", headers=owner.headers)
        deliveries = await client.get(
            f"{WEBHOOKS}/{endpoint['id']}/deliveries", headers=owner.headers
        )

    result = tested.json()
    assert tested.status_code == 200
    assert result["succeeded"] is True
    assert (result["status_code"], result["error"]) == (200, None)
    assert result["latency_ms"] >= 0
    [request] = receiver.requests
    assert receiver.accepted == [request.event_id]
    assert request.headers[EVENT_HEADER] == "webhook.test"
    [delivery] = deliveries.json()["data"]
    assert delivery["id"] == result["delivery_id"]
    assert delivery["event_id"] == request.event_id
    assert (delivery["event"], delivery["status"], delivery["attempts"]) == (
        "webhook.test",
        "succeeded",
        1,
    )
    assert (delivery["last_status_code"], delivery["last_error"]) == (200, None)
    assert delivery["delivered_at"] is not None


async def test_a_failing_receiver_is_reported_not_raised(
    gateway_factory: GatewayFactory, certificate: tuple[Path, Path], receiver: WebhookTestReceiver
) -> None:
    gateway = await _gateway(gateway_factory, certificate)
    owner = await tenant(gateway)
    receiver.script.append(Reply(status=503))
    async with gateway_client(gateway) as client:
        endpoint = await _register(client, owner, receiver)
        tested = await client.post(f"{WEBHOOKS}/{endpoint['id']}/test", headers=owner.headers)
        await receiver.stop()
        unreachable = await client.post(f"{WEBHOOKS}/{endpoint['id']}/test", headers=owner.headers)
        deliveries = await client.get(
            f"{WEBHOOKS}/{endpoint['id']}/deliveries", headers=owner.headers
        )

    assert tested.status_code == 200
    assert tested.json()["succeeded"] is False
    assert tested.json()["status_code"] == 503
    assert unreachable.status_code == 200
    assert unreachable.json()["status_code"] is None
    assert unreachable.json()["error"]
    newest, oldest = deliveries.json()["data"]
    assert (oldest["status"], oldest["last_status_code"]) == ("failed", 503)
    assert newest["status"] == "failed"
    assert newest["last_error"] == unreachable.json()["error"]


async def test_after_rotation_deliveries_are_signed_with_the_new_secret(
    gateway_factory: GatewayFactory, certificate: tuple[Path, Path], receiver: WebhookTestReceiver
) -> None:
    gateway = await _gateway(gateway_factory, certificate)
    owner = await tenant(gateway)
    async with gateway_client(gateway) as client:
        endpoint = await _register(client, owner, receiver)
        old_secret = endpoint["secret"]
        rotated = await client.post(
            f"{WEBHOOKS}/{endpoint['id']}/rotate-secret", headers=owner.headers
        )
        new_secret = rotated.json()["secret"]
        receiver.trust(new_secret)
        tested = await client.post(f"{WEBHOOKS}/{endpoint['id']}/test", headers=owner.headers)
        listed = await client.get(WEBHOOKS, headers=owner.headers)

    assert rotated.status_code == 200
    assert rotated.json() == {"id": endpoint["id"], "secret": new_secret}
    assert new_secret != old_secret
    assert tested.json()["succeeded"] is True
    [request] = receiver.requests
    signature = request.headers[SIGNATURE_HEADER]
    assert verify_signature(new_secret, request.body, signature)
    assert not verify_signature(old_secret, request.body, signature)
    assert receiver.accepted == [request.event_id]
    assert listed.json()["data"][0]["secret_prefix"] == new_secret[:8]


async def test_a_delivery_can_be_sent_again(
    gateway_factory: GatewayFactory, certificate: tuple[Path, Path], receiver: WebhookTestReceiver
) -> None:
    gateway = await _gateway(gateway_factory, certificate)
    owner = await tenant(gateway)
    async with gateway_client(gateway) as client:
        endpoint = await _register(client, owner, receiver)
        base = f"{WEBHOOKS}/{endpoint['id']}"
        first = (await client.post(f"{base}/test", headers=owner.headers)).json()
        again = await client.post(
            f"{base}/deliveries/{first['delivery_id']}/redeliver", headers=owner.headers
        )
        await receiver.wait_for_requests(2)
        deliveries = await _settled_deliveries(client, base, owner)
        unknown = await client.post(f"{base}/deliveries/dlv_nope/redeliver", headers=owner.headers)

    queued = again.json()
    assert again.status_code == 202
    assert queued["status"] == "pending"
    assert queued["event"] == "webhook.test"
    assert queued["id"] != first["delivery_id"]
    original, resent = receiver.requests
    assert resent.body == original.body
    assert receiver.duplicates == 1  # same event id: the receiver deduplicates it
    assert [delivery["id"] for delivery in deliveries] == [queued["id"], first["delivery_id"]]
    assert deliveries[0]["event_id"] == deliveries[1]["event_id"]
    assert unknown.status_code == 404


async def test_a_delivery_to_a_disabled_endpoint_is_a_409_saying_why(
    gateway_factory: GatewayFactory, certificate: tuple[Path, Path], receiver: WebhookTestReceiver
) -> None:
    gateway = await _gateway(gateway_factory, certificate)
    owner = await tenant(gateway)
    receiver.script.append(Reply(status=410))
    async with gateway_client(gateway) as client:
        endpoint = await _register(client, owner, receiver)
        base = f"{WEBHOOKS}/{endpoint['id']}"
        gone = (await client.post(f"{base}/test", headers=owner.headers)).json()
        refused = await client.post(
            f"{base}/deliveries/{gone['delivery_id']}/redeliver", headers=owner.headers
        )

    assert gone["status_code"] == 410
    assert refused.status_code == 409
    assert refused.json() == {
        "detail": f"Cannot redeliver: endpoint {endpoint['id']} is disabled "
        "(the receiver answered 410 Gone); register it again to receive events"
    }


async def _settled_deliveries(
    client: httpx.AsyncClient, base: str, owner: Tenant
) -> list[dict[str, Any]]:
    """The endpoint's deliveries once none is pending."""
    async with asyncio.timeout(5):
        while True:
            response = await client.get(f"{base}/deliveries", headers=owner.headers)
            deliveries: list[dict[str, Any]] = response.json()["data"]
            if all(delivery["status"] != "pending" for delivery in deliveries):
                return deliveries
            await asyncio.sleep(0.05)


async def test_another_accounts_endpoint_is_not_found_everywhere(
    gateway_factory: GatewayFactory, certificate: tuple[Path, Path], receiver: WebhookTestReceiver
) -> None:
    gateway = await _gateway(gateway_factory, certificate)
    owner = await tenant(gateway)
    intruder = await tenant(gateway, "globex")
    async with gateway_client(gateway) as client:
        endpoint = await _register(client, owner, receiver)
        base = f"{WEBHOOKS}/{endpoint['id']}"
        delivery = (await client.post(f"{base}/test", headers=owner.headers)).json()
        attempts = [
            await client.delete(base, headers=intruder.headers),
            await client.post(f"{base}/test", headers=intruder.headers),
            await client.post(f"{base}/rotate-secret", headers=intruder.headers),
            await client.get(f"{base}/deliveries", headers=intruder.headers),
            await client.post(
                f"{base}/deliveries/{delivery['delivery_id']}/redeliver",
                headers=intruder.headers,
            ),
        ]
        theirs = await client.get(WEBHOOKS, headers=intruder.headers)
        still = await client.get(f"{base}/deliveries", headers=owner.headers)

    for response in attempts:
        assert response.status_code == 404, response.request.url
    assert theirs.json()["total"] == 0
    assert len(receiver.requests) == 1
    assert still.json()["total"] == 1


async def test_webhook_management_needs_its_scope(gateway_factory: GatewayFactory) -> None:
    gateway = await _gateway(gateway_factory)
    admin_only = await tenant(gateway, scopes=())
    async with gateway_client(gateway) as client:
        responses = [
            await client.get(WEBHOOKS, headers=admin_only.headers),
            await client.post(WEBHOOKS, json={}, headers=admin_only.headers),
            await client.post(f"{WEBHOOKS}/1/test", headers=admin_only.headers),
        ]
    for response in responses:
        assert response.status_code == 403
        assert "webhooks:manage" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "params", "name"),
    [
        ("", {"page": 0}, "page"),
        ("", {"limit": 101}, "limit"),
        ("/1/deliveries", {"limit": 0}, "limit"),
        ("/0/deliveries", {}, "webhook_id"),
        ("/2147483648/test", {}, "webhook_id"),
        ("/1/deliveries/dlv%20x/redeliver", {}, "delivery_id"),
    ],
)
async def test_out_of_range_parameters_are_400(
    gateway_factory: GatewayFactory, path: str, params: dict[str, int], name: str
) -> None:
    gateway = await _gateway(gateway_factory)
    owner = await tenant(gateway)
    method = "POST" if path.endswith(("test", "redeliver")) else "GET"
    async with gateway_client(gateway) as client:
        response = await client.request(
            method, WEBHOOKS + path, params=params, headers=owner.headers
        )
    assert response.status_code == 400
    assert name in response.json()["detail"]
