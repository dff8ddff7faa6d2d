"""The plugin kit: registration with ownership, typed settings, services and jobs,
dependency injection with the request's transaction, and composable admission."""

from __future__ import annotations

import asyncio
import re
import time
import types
from collections.abc import Callable
from typing import Any

import httpx
import jwt
import msgspec
import pytest
from kit_plugin import Ledger, LedgerPlugin, LedgerSettings
from litestar._kwargs import kwargs_model

import tollway.bodies
from tollway import CustomerTokens, Gateway, RegistrationError, hookimpl, load_settings
from tollway.admission.customers import hash_password, verify_password
from tollway.testing import GatewayFactory, gateway_client, tenant

EXTRA = [("ledger", LedgerPlugin())]


async def _ledger(factory: GatewayFactory, **overrides: Any) -> Gateway:
    return await factory(plugins=[], extra_plugins=EXTRA, isolated=True, **overrides)


# Registration --------------------------------------------------------------------------


def _gateway(*plugins: tuple[str, object], **settings: Any) -> Gateway:
    return Gateway(load_settings(environ={}, plugins=[], **settings), extra_plugins=plugins)


def test_settings_are_typed_and_validated_at_start_up() -> None:
    products = {"ledger": {"settings": {"greeting": "hi"}}}
    gateway = _gateway(*EXTRA, products=products)
    assert gateway.product_settings(LedgerSettings) == LedgerSettings(greeting="hi")
    with pytest.raises(ValueError, match=r"\[products.ledger.settings\].*unknown field `greting`"):
        _gateway(*EXTRA, products={"ledger": {"settings": {"greting": "hi"}}})
    with pytest.raises(ValueError, match=r"\[products.ledger.settings\].*Expected `int`"):
        _gateway(*EXTRA, products={"ledger": {"settings": {"limit": "many"}}})


def test_a_product_without_settings_accepts_none() -> None:
    class Bare(LedgerPlugin):
        @hookimpl
        def tollway_register_settings(self, register: Callable[..., None]) -> None:
            return None

        @hookimpl
        def tollway_register_services(self, register: Callable[..., None], gateway: Any) -> None:
            return None

        @hookimpl
        def tollway_register_jobs(self, register: Callable[..., None], gateway: Any) -> None:
            return None

        @hookimpl
        def tollway_register_routes(self, register: Callable[..., None]) -> None:
            return None

    with pytest.raises(ValueError, match="the 'ledger' product has no settings"):
        _gateway(("bare", Bare()), products={"ledger": {"settings": {"x": 1}}})


def test_settings_must_refuse_unknown_fields_and_belong_to_the_product() -> None:
    class Loose(msgspec.Struct):
        x: int = 1

    class Other:
        @hookimpl
        def tollway_register_settings(self, register: Callable[..., None]) -> None:
            register("ledger", Loose)

    with pytest.raises(RegistrationError, match="'other' registers settings for 'ledger'"):
        _gateway(*EXTRA, ("other", Other()))


def test_a_job_or_service_registered_twice_names_both_plugins() -> None:
    class Copy:
        @hookimpl
        def tollway_register_jobs(self, register: Callable[..., None], gateway: Any) -> None:
            register("ledger.record", gateway.service(Ledger).record)

    with pytest.raises(RegistrationError, match=r"job 'ledger\.record' is registered by") as job:
        _gateway(*EXTRA, ("copy", Copy()))
    assert set(re.findall(r"plugin '(\w+)'", str(job.value))) == {"copy", "ledger"}

    class Twin:
        @hookimpl
        def tollway_register_services(self, register: Callable[..., None], gateway: Any) -> None:
            register(Ledger(gateway))

    with pytest.raises(RegistrationError, match=r"service .*Ledger' is registered by both") as twin:
        _gateway(*EXTRA, ("twin", Twin()))
    assert set(re.findall(r"plugin '(\w+)'", str(twin.value))) == {"twin", "ledger"}


def test_plugin_owned_hooks_get_their_defaults_and_can_be_replaced() -> None:
    assert _gateway(*EXTRA).plugins.hook.tollway_ledger_currency() == "EUR"

    class Dollars:
        @hookimpl
        def tollway_ledger_currency(self) -> str:
            return "USD"

    assert _gateway(*EXTRA, ("dollars", Dollars())).plugins.hook.tollway_ledger_currency() == "USD"


def test_a_hook_defined_by_two_modules_fails_start_up() -> None:
    clash = types.ModuleType("clash_hookspecs")
    exec(
        "import pluggy\nhookspec = pluggy.HookspecMarker('tollway')\n"
        "@hookspec\ndef tollway_ledger_currency(): ...\n",
        clash.__dict__,
    )

    class Clash:
        @hookimpl
        def tollway_add_hookspecs(self, register: Callable[..., None]) -> None:
            register(clash)

    with pytest.raises(RegistrationError, match="'tollway_ledger_currency' is defined by both"):
        _gateway(*EXTRA, ("clash", Clash()))


def test_access_declarations_are_checked_when_routes_are_registered() -> None:
    from litestar import get

    from tollway import Access

    cases: list[tuple[dict[str, Any], str]] = [
        ({"access": "scope"}, "access must be a tollway.Access"),
        ({"access": Access(key=None)}, "needs anonymous=<plan> or public=True"),
        ({"access": Access(key=None, anonymous="nobody")}, "anonymous plan 'nobody' is unknown"),
        ({"access": Access(scope="ledger:raed")}, "scope 'ledger:raed' is not registered"),
        ({"access": Access(), "scope": "ledger:read"}, "not both"),
        ({}, "declare scope=..., admin=True, public=True or access="),
    ]
    for options, message in cases:

        class Routes(LedgerPlugin):
            @hookimpl
            def tollway_register_routes(self, register: Callable[..., None]) -> None:
                @get("/bad", **options)  # noqa: B023  (called at once)
                async def bad() -> None: ...

                register("ledger", [bad])

        with pytest.raises(RegistrationError, match=r"route /v1/ledger/bad.*" + re.escape(message)):
            _gateway(("routes", Routes()))


# Services, jobs and dependency injection ------------------------------------------------


async def test_services_start_and_stop_with_the_gateway_and_run_jobs(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _ledger(gateway_factory)
    ledger = gateway.service(Ledger)
    async with gateway_client(gateway):
        await gateway.jobs.enqueue("ledger.record", entry="one")
        await asyncio.wait_for(ledger.recorded.wait(), timeout=60)
    assert ledger.events == ["start", "job:one", "stop"]
    with pytest.raises(LookupError, match="no plugin registered a str service"):
        gateway.service(str)


async def test_a_start_that_fails_leaves_nothing_running(
    gateway_factory: GatewayFactory,
) -> None:
    class Broken:
        @hookimpl
        async def tollway_startup(self, gateway: Gateway) -> None:
            raise RuntimeError("cannot start")

    gateway = await gateway_factory(
        plugins=[], extra_plugins=[*EXTRA, ("broken", Broken())], isolated=True
    )
    before = asyncio.all_tasks()
    with pytest.raises(RuntimeError, match="cannot start"):
        await gateway.start()
    # The job workers, the webhook dispatcher and the services it had started are
    # stopped again, not left to be garbage-collected while pending.
    assert not [task for task in asyncio.all_tasks() - before if not task.done()]
    assert gateway.service(Ledger).events == ["start", "stop"]


async def test_a_gateway_runs_once_at_a_time(gateway_factory: GatewayFactory) -> None:
    gateway = await _ledger(gateway_factory)
    async with gateway_client(gateway):
        with pytest.raises(RuntimeError, match="already running"):
            await gateway.start()
    async with gateway_client(gateway) as client:  # stopped, it may start again
        assert (await client.get("/v1/ledger/open")).status_code == 200


async def test_handlers_receive_services_and_the_requests_transaction(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _ledger(gateway_factory, products={"ledger": {"settings": {"greeting": "hej"}}})
    async with gateway_client(gateway) as client:
        who = await tenant(
            gateway, "t", plans={"ledger": "basic"}, scopes=["ledger:read", "ledger:write"]
        )
        hello = await client.get("/v1/ledger/hello", headers=who.headers)
        assert hello.json() == {"greeting": "hej"}
        kept = await client.post("/v1/ledger/entries", json={"amount": 5}, headers=who.headers)
        refused = await client.post("/v1/ledger/entries", json={"amount": -1}, headers=who.headers)
        assert (kept.status_code, refused.status_code) == (201, 409)
        assert refused.json() == {"detail": "Entries must not be negative"}
        counted = await client.get("/v1/ledger/entries", headers=who.headers)
    # The refused entry's insert was rolled back with the request's transaction.
    assert counted.json() == {"entries": 1}


async def test_a_handlers_dependencies_are_resolved_one_after_another(
    gateway_factory: GatewayFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Litestar resolves dependencies that do not need each other (here the request's
    transaction and its caller) in an anyio task group, which cost a tenth of a
    database-backed list's CPU; the kit's routes resolve them in turn."""

    def no_task_group() -> None:
        raise AssertionError("a task group was started for the dependencies")

    monkeypatch.setattr(kwargs_model, "create_task_group", no_task_group)
    gateway = await _ledger(gateway_factory)
    async with gateway_client(gateway) as client:
        who = await tenant(gateway, "t", plans={"ledger": "basic"}, scopes=["ledger:write"])
        kept = await client.post("/v1/ledger/entries", json={"amount": 5}, headers=who.headers)
    assert kept.status_code == 201, kept.text


# Admission --------------------------------------------------------------------------------


async def test_keyless_routes_count_per_client_address(gateway_factory: GatewayFactory) -> None:
    # Behind a trusted proxy, so one client can speak for two addresses.
    gateway = await _ledger(gateway_factory, trusted_proxies=["127.0.0.1"])

    async def call(address: str) -> httpx.Response:
        return await client.get("/v1/ledger/open", headers={"X-Forwarded-For": address})

    async with gateway_client(gateway) as client:
        answers = [await call("192.0.2.1") for _ in range(4)]
        other = await call("192.0.2.2")
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    assert [answer.headers["x-ratelimit-remaining"] for answer in answers[:3]] == ["2", "1", "0"]
    assert other.status_code == 200
    assert other.headers["x-ratelimit-limit"] == "3"


async def test_the_key_may_come_from_the_query_or_the_body(gateway_factory: GatewayFactory) -> None:
    gateway = await _ledger(gateway_factory)
    async with gateway_client(gateway) as client:
        who = await tenant(
            gateway, "t", plans={"ledger": "basic"}, scopes=["ledger:write", "ledger:read"]
        )
        by_query = await client.get("/v1/ledger/query", params={"api_key": who.key})
        no_key = await client.get("/v1/ledger/query")
        by_body = await client.post("/v1/ledger/body", json={"amount": 2, "api_key": who.key})
        anonymous = await client.post("/v1/ledger/body", json={"amount": 2})
        wrong = await client.post("/v1/ledger/body", json={"amount": 2, "api_key": "tw_nope"})
    assert by_query.json() == {"account": who.account_id}
    assert no_key.status_code == 401
    assert no_key.json() == {"detail": "Missing api_key"}  # not the header's advice
    assert "WWW-Authenticate" not in no_key.headers  # only the Authorization header has one
    # The key's plan (5 a minute) counts the body route; without a key the anonymous one.
    assert (by_body.status_code, by_body.headers["x-ratelimit-limit"]) == (200, "5")
    assert (anonymous.status_code, anonymous.headers["x-ratelimit-limit"]) == (200, "3")
    # An unknown key is refused after counting against the address.
    assert (wrong.status_code, wrong.headers["x-ratelimit-remaining"]) == (401, "1")


async def test_a_json_body_is_decoded_once(
    gateway_factory: GatewayFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = await _ledger(gateway_factory)
    decoded: list[bytes] = []
    strict = tollway.bodies.decode_json_body

    def counting(body: bytes, into: Any) -> Any:
        decoded.append(body)
        return strict(body, into)

    monkeypatch.setattr(tollway.bodies, "decode_json_body", counting)
    async with gateway_client(gateway) as client:
        who = await tenant(gateway, "t", plans={"ledger": "basic"}, scopes=["ledger:write"])
        answer = await client.post("/v1/ledger/body", json={"amount": 7, "api_key": who.key})
    assert answer.json() == {"amount": 7}
    assert len(decoded) == 1


async def test_customer_routes_need_a_token_of_the_keys_account_for_the_product(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await _ledger(gateway_factory)
    tokens = await gateway.customer_tokens()
    async with gateway_client(gateway) as client:
        who = await tenant(gateway, "t", plans={"ledger": "basic"}, scopes=["ledger:read"])
        other = await tenant(gateway, "o", plans={"ledger": "basic"}, scopes=["ledger:read"])
        token = tokens.issue(account_id=who.account_id, product="ledger", customer_id="c-1")

        async def me(customer_token: str | None) -> tuple[int, Any]:
            headers = dict(who.headers)
            if customer_token is not None:
                headers["X-Customer-Token"] = customer_token
            answer = await client.get("/v1/ledger/me", headers=headers)
            return answer.status_code, answer.json()

        assert await me(token) == (200, {"customer": "c-1", "account": who.account_id})
        assert (await me(None))[0] == 401
        for refused in (
            tokens.issue(account_id=other.account_id, product="ledger", customer_id="c-1"),
            tokens.issue(account_id=who.account_id, product="chat", customer_id="c-1"),
            tokens.issue(account_id=who.account_id, product="ledger", customer_id="c", ttl=-5),
            token[:-2] + ("AA" if not token.endswith("AA") else "BB"),
            jwt.encode(
                {
                    "sub": "c-1",
                    "acc": who.account_id,
                    "aud": "tollway:ledger",
                    "exp": int(time.time()) + 60,
                },
                "",
                algorithm="none",
            ),
        ):
            status, body = await me(refused)
            assert status == 401, body
            assert "X-Customer-Token" in body["detail"]


def test_customer_tokens_pin_the_algorithm() -> None:
    secret = "s" * 64
    tokens = CustomerTokens(secret)
    forged = jwt.encode(
        {"sub": "c", "acc": 1, "aud": "tollway:ledger", "exp": int(time.time()) + 60},
        secret,
        algorithm="HS512",
    )
    with pytest.raises(Exception, match="not a valid token"):
        tokens.verify(forged, account_id=1, product="ledger")
    with pytest.raises(ValueError, match="at least 32"):
        CustomerTokens("short")


async def test_passwords_are_argon2id() -> None:
    stored = await hash_password("correct horse")
    assert stored.startswith("$argon2id$")
    assert await verify_password(stored, "correct horse")
    assert not await verify_password(stored, "wrong horse")
    assert not await verify_password("not a hash", "correct horse")
