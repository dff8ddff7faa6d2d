"""Registering a webhook endpoint over ``POST /v1/pos/webhooks``: the record (its secret
shown this once), the refusals (events that are not the point of sale's, URLs the
engine refuses), and an endpoint receiving the store's events, signed with that
secret, over HTTPS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pos_client import order, pos_client, product

from tollway.testing import ProductClientFactory, WebhookTestReceiver, emitted
from tollway_pos.product import EVENTS, LOW_STOCK, ORDER_CREATED

HOOK = "https://127.0.0.1/hooks/pos"


async def test_registering_answers_the_endpoint_and_its_secret(
    product_client: ProductClientFactory,
) -> None:
    async with pos_client(product_client) as pos:
        body = {"url": f" {HOOK} ", "events": list(EVENTS), "description": " Kitchen screen "}
        created = await pos.call("POST", "/webhooks", json=body, expect=201)
        assert created == {
            "id": created["id"],
            "url": HOOK,
            "events": list(EVENTS),
            "description": "Kitchen screen",
            "is_active": True,
            "disabled_reason": None,
            "created_at": created["created_at"],
            "secret_prefix": created["secret"][:8],
            "secret": created["secret"],
        }
        assert created["secret"].startswith("whsec_")
        assert len(created["secret"]) > 30
        plain = await pos.call(
            "POST", "/webhooks", json={"url": HOOK, "events": [LOW_STOCK]}, expect=201
        )
        assert (plain["description"], plain["events"]) == ("", [LOW_STOCK])
        assert plain["id"] != created["id"]
        assert plain["secret"] != created["secret"]


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (
            {"url": HOOK, "events": [ORDER_CREATED, "order.paid"]},
            "Not a point of sale event: order.paid",
        ),
        ({"url": HOOK, "events": ["webhook.test"]}, "Not a point of sale event: webhook.test"),
        (
            {"url": "http://127.0.0.1/hooks/pos", "events": [ORDER_CREATED]},
            "Cannot register webhook endpoint: invalid webhook URL: URL must use https://",
        ),
        (
            {"url": "https://user:pw@127.0.0.1/hooks", "events": [ORDER_CREATED]},
            "Cannot register webhook endpoint: invalid webhook URL: URL must not contain "
            "credentials",
        ),
        (
            {"url": HOOK, "events": [ORDER_CREATED, ORDER_CREATED]},
            "Cannot register webhook endpoint: duplicate event(s): order.created",
        ),
        (
            {"url": HOOK, "events": []},
            "Invalid request body: Expected `array` of length >= 1 - at `$.events`",
        ),
        (
            {"url": HOOK, "events": [ORDER_CREATED], "secret": "mine"},
            "Invalid request body: Object contains unknown field `secret`",
        ),
    ],
)
async def test_what_registering_refuses(
    product_client: ProductClientFactory, body: dict[str, Any], detail: str
) -> None:
    async with pos_client(product_client) as pos:
        assert await pos.call("POST", "/webhooks", json=body, expect=400) == {"detail": detail}
        assert await pos.gateway.webhooks.list_endpoints(pos.owner.account_id) == ([], 0)


async def test_a_private_address_is_refused_unless_allowed(
    product_client: ProductClientFactory,
) -> None:
    refusing = {"webhooks_allow_private_addresses": False}
    async with pos_client(product_client, gateway=refusing) as pos:
        body = {"url": HOOK, "events": [ORDER_CREATED]}
        error = await pos.call("POST", "/webhooks", json=body, expect=400)
        assert error["detail"].startswith("Cannot register webhook endpoint: invalid webhook URL")
        assert "loopback" in error["detail"]


async def test_an_endpoint_receives_the_stores_signed_events(
    product_client: ProductClientFactory,
    webhook_receiver: WebhookTestReceiver,
    webhook_certificate: tuple[Path, Path],
) -> None:
    trusted = {"webhooks_ca_file": str(webhook_certificate[0])}
    async with pos_client(product_client, gateway=trusted) as pos:
        body = {"url": webhook_receiver.url(), "events": [ORDER_CREATED]}
        endpoint = await pos.call("POST", "/webhooks", json=body, expect=201)
        webhook_receiver.trust(endpoint["secret"])
        fries = await product(pos, "Fries")
        theirs = await product(pos, "Fries", by=pos.other)
        await pos.call(
            "POST",
            "/orders",
            json={"order_type": "takeaway", "items": [{"product_id": theirs["id"], "qty": 1}]},
            by=pos.other,
            expect=201,
        )
        placed = await order(pos, [{"product_id": fries["id"], "qty": 2}])
        await webhook_receiver.wait_for(1, within=30)
        [request] = webhook_receiver.requests
        assert webhook_receiver.rejected == []
        delivered = json.loads(request.body)
        assert delivered["id"] == request.event_id
        assert (delivered["event"], delivered["data"]) == (ORDER_CREATED, placed)
        # The other store's order was not even recorded: it has no endpoint.
        assert [(account, event) for account, event, _ in await emitted(pos.gateway)] == [
            (pos.owner.account_id, ORDER_CREATED)
        ]
