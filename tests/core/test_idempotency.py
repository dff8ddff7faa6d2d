"""``Idempotency-Key`` on routes declaring ``idempotent=True``, with Stripe's rules, on
SQLite and PostgreSQL: replays, refusals, what is kept and what frees a key, expiry,
and exactly one run of racing requests, through the real app."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest
from idempotency_plugin import ROUTES, WRITE, Orders, OrdersPlugin
from litestar import post
from sqlalchemy import select, update

from tollway import Gateway, RegistrationError, create_app, load_settings, utcnow
from tollway.idempotency import (
    BAD_KEY,
    IN_PROGRESS,
    REUSED,
    IdempotencyKey,
    IdempotencyKeys,
    settle_answers,
)
from tollway.testing import GatewayFactory, Tenant, gateway_client, tenant

ORDERS = "/v1/orders/orders"
DEADLINE = 10.0
"""Seconds a test waits for a held request to reach its handler."""


@pytest.fixture
async def gateway(gateway_factory: GatewayFactory) -> Gateway:
    return await gateway_factory(plugins=[], extra_plugins=[("orders", OrdersPlugin())])


@pytest.fixture
async def who(gateway: Gateway) -> Tenant:
    return await tenant(gateway, "acme", plans={"orders": "basic"}, scopes=[WRITE])


def _orders(gateway: Gateway) -> Orders:
    return gateway.service(Orders)


async def _post(
    client: httpx.AsyncClient,
    who: Tenant,
    item: str = "pen",
    *,
    key: str | None = "key-1",
    path: str = ORDERS,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    sent = {**who.headers, **(headers or {})}
    if key is not None:
        sent["Idempotency-Key"] = key
    return await client.post(path, json={"item": item}, headers=sent)


async def _keys(gateway: Gateway) -> dict[str, IdempotencyKey]:
    async with gateway.database.transaction() as session:
        rows = (await session.scalars(select(IdempotencyKey))).all()
    return {row.key: row for row in rows}


async def _set(gateway: Gateway, key: str, **values: Any) -> None:
    """Change a key's row as time or another process would."""
    async with gateway.database.transaction() as session:
        await session.execute(
            update(IdempotencyKey).where(IdempotencyKey.key == key).values(**values)
        )


def _replayed(response: httpx.Response) -> bool:
    return bool(response.headers.get("idempotent-replayed") == "true")


# Replays and refusals ---------------------------------------------------------------


async def test_a_retry_gets_the_first_answer_without_running_the_handler(
    gateway: Gateway, who: Tenant
) -> None:
    async with gateway_client(gateway) as client:
        first = await _post(client, who)
        again = await _post(client, who)
        assert first.status_code == 201
        assert not _replayed(first)
        assert _replayed(again)
        assert again.status_code == 201
        assert again.content == first.content
        assert again.headers["content-type"] == first.headers["content-type"] == "application/json"
        assert (
            again.headers["location"]
            == first.headers["location"]
            == f"/v1/orders/{first.json()['id']}"
        )
        assert again.headers["x-request-id"] != first.headers["x-request-id"]
        assert "x-ratelimit-remaining" in again.headers
        assert _orders(gateway).runs["pen"] == 1
        assert await _orders(gateway).count(gateway, "pen") == 1


async def test_a_text_answer_is_replayed_with_its_content_type(
    gateway: Gateway, who: Tenant
) -> None:
    async with gateway_client(gateway) as client:
        first = await _post(client, who, "card", path="/v1/orders/receipts")
        again = await _post(client, who, "card", path="/v1/orders/receipts")
        assert (first.status_code, first.text) == (201, "receipt for card")
        assert (again.status_code, again.text, _replayed(again)) == (201, "receipt for card", True)
        assert again.headers["content-type"] == first.headers["content-type"]
        assert first.headers["content-type"] == "text/plain; charset=utf-8"
        assert "location" not in again.headers
        assert _orders(gateway).runs["card"] == 1


@pytest.mark.parametrize(
    ("item", "path"),
    [("other", ORDERS), ("pen", "/v1/orders/receipts"), ("pen", ORDERS + "?note=1")],
    ids=["body", "path", "query"],
)
async def test_a_key_reused_for_another_request_is_409(
    gateway: Gateway, who: Tenant, item: str, path: str
) -> None:
    async with gateway_client(gateway) as client:
        assert (await _post(client, who)).status_code == 201
        reused = await _post(client, who, item, path=path)
        assert reused.status_code == 409
        assert reused.json() == {"detail": REUSED}
        assert sum(_orders(gateway).runs.values()) == 1


async def test_keys_belong_to_one_account(gateway: Gateway, who: Tenant) -> None:
    async with gateway_client(gateway) as client:
        other = await tenant(gateway, "globex", plans={"orders": "basic"}, scopes=[WRITE])
        mine = await _post(client, who)
        theirs = await _post(client, other)
        assert (mine.status_code, theirs.status_code) == (201, 201)
        assert not _replayed(theirs)
        assert mine.json()["id"] != theirs.json()["id"]
        assert (await _post(client, other)).json() == theirs.json()
        assert _orders(gateway).runs["pen"] == 2


async def test_keys_belong_to_one_product(gateway: Gateway, who: Tenant) -> None:
    fingerprint = "f" * 64
    ledger = IdempotencyKeys(gateway.database, "ledger", 60)
    orders = IdempotencyKeys(gateway.database, "orders", 60)
    first = await ledger.claim(who.account_id, "shared", fingerprint)
    second = await orders.claim(who.account_id, "shared", fingerprint)
    assert isinstance(first, tuple)
    assert isinstance(second, tuple)
    assert first[0] != second[0]


async def test_the_customer_token_is_part_of_the_request(gateway: Gateway, who: Tenant) -> None:
    async with gateway_client(gateway) as client:
        tokens = await gateway.customer_tokens()
        ann, bob = (
            tokens.issue(account_id=who.account_id, product="orders", customer_id=name)
            for name in ("ann", "bob")
        )
        path = "/v1/orders/for-customer"
        first = await _post(client, who, path=path, headers={"X-Customer-Token": ann})
        as_bob = await _post(client, who, path=path, headers={"X-Customer-Token": bob})
        again = await _post(client, who, path=path, headers={"X-Customer-Token": ann})
        assert (first.status_code, first.json()) == (201, {"customer": "ann", "item": "pen"})
        assert (as_bob.status_code, as_bob.json()) == (409, {"detail": REUSED})
        assert (again.json(), _replayed(again)) == (first.json(), True)
        assert _orders(gateway).runs["pen"] == 1


@pytest.mark.parametrize(
    "value",
    [b"", b"k" * 256, "cl\u00e9".encode(), b"tab\there", b"nul\x00"],
    ids=["empty", "too-long", "not-ascii", "tab", "control"],
)
async def test_a_malformed_key_is_400_and_runs_nothing(
    gateway: Gateway, who: Tenant, value: bytes
) -> None:
    async with gateway_client(gateway) as client:
        headers = [(name.encode(), sent.encode()) for name, sent in who.headers.items()]
        headers.append((b"Idempotency-Key", value))
        answer = await client.post(ORDERS, json={"item": "pen"}, headers=headers)
        assert (answer.status_code, answer.json()) == (400, {"detail": BAD_KEY})
        assert _orders(gateway).runs["pen"] == 0
        assert await _keys(gateway) == {}


async def test_keys_of_255_printable_characters_and_one_key_only(
    gateway: Gateway, who: Tenant
) -> None:
    async with gateway_client(gateway) as client:
        longest = "~ !" + "k" * 252
        assert (await _post(client, who, key=longest)).status_code == 201
        assert set(await _keys(gateway)) == {longest}
        twice = [*who.headers.items(), ("Idempotency-Key", "a"), ("Idempotency-Key", "b")]
        answer = await client.post(ORDERS, json={"item": "pen"}, headers=twice)
        assert (answer.status_code, answer.json()) == (
            400,
            {"detail": "Send one Idempotency-Key header"},
        )


async def test_refusals_before_the_handler_keep_nothing(gateway: Gateway, who: Tenant) -> None:
    async with gateway_client(gateway) as client:
        headers = {"Idempotency-Key": "key-1"}
        unknown = await client.post(
            ORDERS, json={"item": "pen"}, headers={**headers, "Authorization": "Bearer nope"}
        )
        invalid = await client.post(ORDERS, json={"item": 1}, headers={**headers, **who.headers})
        assert (unknown.status_code, invalid.status_code) == (401, 400)
        assert await _keys(gateway) == {}
        assert (await _post(client, who)).status_code == 201


async def test_routes_not_declaring_it_ignore_the_header(gateway: Gateway, who: Tenant) -> None:
    async with gateway_client(gateway) as client:
        plain = [await _post(client, who, path="/v1/orders/plain") for _ in range(2)]
        unkeyed = [await _post(client, who, "cup", key=None) for _ in range(2)]
        assert [answer.status_code for answer in plain + unkeyed] == [201] * 4
        assert not any(_replayed(answer) for answer in plain + unkeyed)
        assert plain[0].json()["id"] != plain[1].json()["id"]
        assert _orders(gateway).runs == {"pen": 2, "cup": 2}
        assert await _keys(gateway) == {}


async def test_routes_not_declaring_it_are_left_as_they_are(gateway: Gateway) -> None:
    app = create_app(gateway)
    handlers = {
        route.path: handler
        for route in app.routes
        for handler in getattr(route, "route_handlers", ())
        if "POST" in handler.http_methods
    }
    plain, idempotent = handlers["/v1/orders/plain"], handlers[ORDERS]
    assert settle_answers not in plain.resolve_middleware()
    assert plain.after_request is None
    assert plain.resolve_dependencies()["transaction"] is app.dependencies["transaction"]
    assert settle_answers in idempotent.resolve_middleware()
    assert idempotent.resolve_dependencies()["transaction"] is not app.dependencies["transaction"]


# What is kept, what frees the key ---------------------------------------------------


async def test_a_4xx_of_the_handler_is_kept(gateway: Gateway, who: Tenant) -> None:
    async with gateway_client(gateway) as client:
        declined = await _post(client, who, "declined")
        again = await _post(client, who, "declined")
        assert (declined.status_code, declined.json()) == (
            422,
            {"detail": "Your card was declined"},
        )
        assert (again.status_code, again.json(), _replayed(again)) == (422, declined.json(), True)
        assert _orders(gateway).runs["declined"] == 1
        assert await _orders(gateway).count(gateway, "declined") == 0  # rolled back


async def test_a_5xx_frees_the_key_so_a_retry_runs_again(gateway: Gateway, who: Tenant) -> None:
    async with gateway_client(gateway) as client:
        failed = await _post(client, who, "flaky")
        assert failed.status_code == 500
        assert await _keys(gateway) == {}
        retried = await _post(client, who, "flaky")
        replayed = await _post(client, who, "flaky")
        assert (retried.status_code, _replayed(retried)) == (201, False)
        assert (replayed.json(), _replayed(replayed)) == (retried.json(), True)
        assert _orders(gateway).runs["flaky"] == 2
        assert await _orders(gateway).count(gateway, "flaky") == 1


async def test_a_handler_committing_on_its_own_has_its_answer_kept(
    gateway: Gateway, who: Tenant
) -> None:
    async with gateway_client(gateway) as client:
        first = await _post(client, who, path="/v1/orders/own-transaction")
        again = await _post(client, who, path="/v1/orders/own-transaction")
        assert first.status_code == 201
        assert (again.json(), _replayed(again)) == (first.json(), True)
        assert _orders(gateway).runs["pen"] == 1
        assert (await _keys(gateway))["key-1"].status_code == 201


async def test_the_answer_is_stored_in_the_handlers_transaction(
    gateway: Gateway, who: Tenant
) -> None:
    """While the request runs, its lease lapses and another process takes the key over:
    storing its answer then fails, and its own insert goes with it."""
    async with gateway_client(gateway) as client:
        orders = _orders(gateway)

        async def take_over() -> None:
            async with asyncio.timeout(DEADLINE):
                await orders.entered.wait()
            await _set(gateway, "key-1", lease_token="t" * 32)
            orders.release.set()

        held, _ = await asyncio.gather(_post(client, who, "hold"), take_over())
        assert (held.status_code, held.json()) == (409, {"detail": IN_PROGRESS})
        assert await orders.count(gateway, "hold") == 0
        assert (await _keys(gateway))["key-1"].status_code is None


# Concurrency and leases -------------------------------------------------------------


async def test_a_request_racing_one_in_progress_is_409_and_one_runs(
    gateway: Gateway, who: Tenant
) -> None:
    async with gateway_client(gateway) as client:
        orders = _orders(gateway)

        async def second() -> httpx.Response:
            try:
                async with asyncio.timeout(DEADLINE):
                    await orders.entered.wait()
                return await _post(client, who, "hold")
            finally:
                orders.release.set()

        first, racing = await asyncio.gather(_post(client, who, "hold"), second())
        assert (racing.status_code, racing.json()) == (409, {"detail": IN_PROGRESS})
        assert first.status_code == 201
        again = await _post(client, who, "hold")
        assert (again.json(), _replayed(again)) == (first.json(), True)
        assert orders.runs["hold"] == 1
        assert await orders.count(gateway, "hold") == 1


async def test_racing_requests_run_once_per_key(gateway: Gateway, who: Tenant) -> None:
    async with gateway_client(gateway) as client:
        items = [f"race-{n}" for n in range(8)]
        answers = await asyncio.gather(
            *(_post(client, who, item, key=item) for item in items for _ in range(2))
        )
        for item, pair in zip(items, zip(answers[::2], answers[1::2], strict=True), strict=True):
            ran = [answer for answer in pair if answer.status_code == 201 and not _replayed(answer)]
            others = [answer for answer in pair if answer not in ran]
            assert len(ran) == 1, item
            [other] = others
            assert other.status_code in (201, 409), item
            if other.status_code == 201:
                assert (_replayed(other), other.json()) == (True, ran[0].json())
            else:
                assert other.json() == {"detail": IN_PROGRESS}
            assert _orders(gateway).runs[item] == 1
            assert await _orders(gateway).count(gateway, item) == 1


async def test_a_request_that_died_holds_its_key_until_the_lease_lapses(
    gateway: Gateway, who: Tenant
) -> None:
    async with gateway_client(gateway) as client:
        orders = _orders(gateway)
        dying = asyncio.create_task(_post(client, who, "hold"))
        async with asyncio.timeout(DEADLINE):
            await orders.entered.wait()
        dying.cancel()
        with pytest.raises(asyncio.CancelledError):
            await dying
        orders.release.set()
        blocked = await _post(client, who, "hold")
        assert (blocked.status_code, blocked.json()) == (409, {"detail": IN_PROGRESS})
        await _set(gateway, "key-1", locked_until=utcnow() - timedelta(seconds=1))
        retried = await _post(client, who, "hold")
        assert (retried.status_code, _replayed(retried)) == (201, False)
        assert orders.runs["hold"] == 2
        assert await orders.count(gateway, "hold") == 1


# Expiry ---------------------------------------------------------------------------------


async def test_keys_live_for_the_ttl_setting(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory(
        plugins=[], extra_plugins=[("orders", OrdersPlugin())], idempotency_key_ttl=600
    )
    who = await tenant(gateway, "acme", plans={"orders": "basic"}, scopes=[WRITE])
    async with gateway_client(gateway) as client:
        assert (await _post(client, who)).status_code == 201
    row = (await _keys(gateway))["key-1"]
    assert timedelta(seconds=599) <= row.expires_at - row.created_at <= timedelta(seconds=601)
    assert load_settings(environ={}).idempotency_key_ttl == 86_400
    with pytest.raises(ValueError, match="idempotency_key_ttl"):
        load_settings(environ={}, idempotency_key_ttl=0)


async def test_an_expired_key_is_new_and_expired_keys_are_purged(
    gateway: Gateway, who: Tenant
) -> None:
    async with gateway_client(gateway) as client:
        assert (await _post(client, who, "pen", key="old")).status_code == 201
        assert (await _post(client, who, "pen", key="reused")).status_code == 201
        past = utcnow() - timedelta(seconds=1)
        for key in ("old", "reused"):
            await _set(gateway, key, expires_at=past)
        reused = await _post(client, who, "cup", key="reused")
        assert (reused.status_code, _replayed(reused)) == (201, False)
        assert set(await _keys(gateway)) == {"old", "reused"}  # taken over, not purged
        assert (await _post(client, who, "mug", key="new")).status_code == 201
        assert set(await _keys(gateway)) == {"reused", "new"}
        assert _orders(gateway).runs == {"pen": 2, "cup": 1, "mug": 1}


# Start-up ---------------------------------------------------------------------------


@post("/open", public=True, idempotent=True)
async def open_route() -> None:
    return None


@post("/yes", scope=WRITE, idempotent="yes")
async def yes_route() -> None:
    return None


@pytest.mark.parametrize(
    ("route", "problem"),
    [(open_route, "needs a keyed route"), (yes_route, "must be True or False")],
    ids=["public", "not-a-bool"],
)
def test_start_up_refuses_routes_that_cannot_be_idempotent(route: Any, problem: str) -> None:
    plugin = OrdersPlugin(routes=[*ROUTES, route])
    gateway = Gateway(load_settings(environ={}, plugins=[]), extra_plugins=[("orders", plugin)])
    with pytest.raises(RegistrationError, match=f"plugin 'orders', route .*: .*{problem}"):
        create_app(gateway)


async def test_an_error_on_an_idempotent_route_carries_each_header_once(
    gateway: Gateway, who: Tenant
) -> None:
    """An idempotent route has middleware, so Litestar answers its errors from an
    exception layer of the route's own; that answer still goes out through the entry's
    stamping send, and is stamped there alone."""
    async with gateway_client(gateway) as client:
        response = await client.post(
            ORDERS,
            content=b"{not json",
            headers={**who.headers, "Idempotency-Key": "once", "Content-Type": "application/json"},
        )
    assert response.status_code == 400
    names = [name.lower() for name, _ in response.headers.raw]
    assert names.count(b"x-request-id") == 1
    assert names.count(b"x-ratelimit-remaining") == 1
