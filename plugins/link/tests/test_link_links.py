"""Links over HTTP: creation and its rules, codes (generated, chosen, reserved, taken),
reading, search and pages, changes, deletion, tenant isolation, short URLs and events."""

from __future__ import annotations

import re
from typing import Any

import pytest
from link_client import LINK, open_link
from sqlalchemy import func, insert, select

from tollway import utcnow
from tollway.testing import ProductClientFactory, emitted, subscribe
from tollway_link.models import Click
from tollway_link.product import EVENTS, LINKS_READ

ID = re.compile(r"lnk_[0-9A-Za-z]{16}")


async def test_a_link_with_only_a_destination(product_client: ProductClientFactory) -> None:
    async with open_link(product_client) as link:
        created = await link.create("https://example.com/spring?utm_source=mail")
        code = created["code"]
        assert ID.fullmatch(created["id"])
        assert re.fullmatch(r"[0-9A-Za-z]{7}", code)
        assert created == {
            "id": created["id"],
            "code": code,
            "short_url": f"http://testserver/l/{code}",
            "destination_url": "https://example.com/spring?utm_source=mail",
            "title": None,
            "tags": [],
            "expires_at": None,
            "expired_url": None,
            "max_clicks": None,
            "clicks": 0,
            "created_at": created["created_at"],
            "updated_at": created["created_at"],
        }
        assert await link.call("GET", f"/links/{created['id']}") == created
        listed = await link.call("GET", "/links")
        assert listed == {"data": [created], "total": 1, "page": 1, "limit": 25}


async def test_every_field_and_how_it_is_kept(product_client: ProductClientFactory) -> None:
    async with open_link(product_client) as link:
        created = await link.create(
            "  HTTPS://Bücher.example/straße?q=ü#top\n",
            code="Spring_Sale-24",
            title="  Spring sale \n",
            tags=[" mail", "spring", "mail "],
            expires_at="2030-01-01T09:30:00+09:00",
            expired_url="http://example.com/over",
            max_clicks=100,
        )
        assert created["code"] == "Spring_Sale-24"
        assert created["short_url"] == "http://testserver/l/Spring_Sale-24"
        assert created["destination_url"] == (
            "https://xn--bcher-kva.example/stra%C3%9Fe?q=%C3%BC#top"
        )
        assert (created["title"], created["tags"]) == ("Spring sale", ["mail", "spring"])
        assert created["expires_at"] == "2030-01-01T00:30:00Z"
        assert (created["expired_url"], created["max_clicks"]) == ("http://example.com/over", 100)
        assert (await link.create(title="   "))["title"] is None


@pytest.mark.parametrize(
    ("destination", "why"),
    [
        ("example.com/page", "must be an absolute http:// or https:// URL"),
        ("ftp://example.com/file", "must be an absolute http:// or https:// URL"),
        ("javascript:alert(1)", "must be an absolute http:// or https:// URL"),
        ("https://", "has no host"),
        ("https://bank.example@evil.example/", "must not carry a user name or password"),
        ("https://example.com/a b", "must not contain spaces or control characters"),
        ("https://example.com/\r\nSet-Cookie: x=1", "must not contain spaces or control"),
        ("https://evil.example\\.example.com/", "has a host that is not valid"),
        ("https://example.com:99999/", "is not a valid URL"),
    ],
)
async def test_a_destination_that_is_no_web_url_is_422(
    product_client: ProductClientFactory, destination: str, why: str
) -> None:
    async with open_link(product_client) as link:
        body = {"destination_url": destination}
        error = await link.call("POST", "/links", json=body, expect=422)
        assert error["detail"].startswith(f"destination_url {why}")
        expired = {"destination_url": "https://example.com/", "expired_url": destination}
        error = await link.call("POST", "/links", json=expired, expect=422)
        assert error["detail"].startswith(f"expired_url {why}")
        assert (await link.call("GET", "/links"))["total"] == 0


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"destination_url": ""},
        {"destination_url": "https://example.com/" + "a" * 2048},
        {"destination_url": "https://example.com/", "code": ""},
        {"destination_url": "https://example.com/", "code": "a" * 65},
        {"destination_url": "https://example.com/", "code": "spring sale"},
        {"destination_url": "https://example.com/", "code": "spring.sale"},
        {"destination_url": "https://example.com/", "code": "spring\n"},
        {"destination_url": "https://example.com/", "title": "a" * 201},
        {"destination_url": "https://example.com/", "tags": ["a" * 51]},
        {"destination_url": "https://example.com/", "tags": ["x"] * 21},
        {"destination_url": "https://example.com/", "tags": ["  "]},
        {"destination_url": "https://example.com/", "expires_at": "2030-01-01T00:00:00"},
        {"destination_url": "https://example.com/", "max_clicks": 0},
        {"destination_url": "https://example.com/", "clicks": 5},
    ],
)
async def test_a_body_outside_the_schema_is_400(
    product_client: ProductClientFactory, body: dict[str, Any]
) -> None:
    async with open_link(product_client) as link:
        error = await link.call("POST", "/links", json=body, expect=400)
        assert error["detail"].startswith("Invalid request body")


@pytest.mark.parametrize(
    "code", ["l", "L", "v1", "api", "healthz", "readyz", "metrics", "schema", "docs", "Docs"]
)
async def test_codes_reading_like_the_gateways_paths_are_refused(
    product_client: ProductClientFactory, code: str
) -> None:
    async with open_link(product_client) as link:
        body = {"destination_url": "https://example.com/", "code": code}
        error = await link.call("POST", "/links", json=body, expect=422)
        assert error == {"detail": f"code {code!r} is reserved"}
        created = await link.create()
        await link.call("PATCH", f"/links/{created['id']}", json={"code": code}, expect=422)


async def test_a_code_is_one_for_the_whole_deployment(
    product_client: ProductClientFactory,
) -> None:
    async with open_link(product_client) as link:
        await link.create(code="launch")
        body = {"destination_url": "https://example.com/", "code": "launch"}
        error = await link.call("POST", "/links", json=body, expect=409, by=link.other)
        assert error == {"detail": "code 'launch' is already taken"}
        await link.create(code="Launch")  # codes are case-sensitive
        other = await link.call(
            "POST", "/links", json={**body, "code": "x"}, by=link.other, expect=201
        )
        await link.call(
            "PATCH", f"/links/{other['id']}", json={"code": "launch"}, expect=409, by=link.other
        )
        assert (await link.call("GET", f"/links/{other['id']}", by=link.other))["code"] == "x"


async def test_another_accounts_link_is_not_found(product_client: ProductClientFactory) -> None:
    async with open_link(product_client) as link:
        created = await link.create(code="mine")
        path = f"/links/{created['id']}"
        for method, body in (("GET", None), ("PATCH", {"title": "x"}), ("DELETE", None)):
            error = await link.call(method, path, json=body, expect=404, by=link.other)
            assert error == {"detail": f"Link {created['id']} not found"}
        assert (await link.call("GET", "/links", by=link.other))["total"] == 0
        assert await link.call("GET", path) == created
        await link.call("GET", "/links/lnk_0000000000000000", expect=404)
        error = await link.call("GET", "/links/42", expect=400)
        assert error["detail"].startswith("Invalid request: link_id")


async def test_search_and_pages(product_client: ProductClientFactory) -> None:
    async with open_link(product_client) as link:
        first = await link.create("https://shop.example/Spring", code="promo")
        second = await link.create("https://blog.example/100%_real", code="post_1")
        third = await link.create("https://blog.example/autumn", code="Fall")
        await link.call("POST", "/links", json={"destination_url": "https://shop.example/x"},
                        by=link.other, expect=201)  # fmt: skip
        page = await link.call("GET", "/links", params={"limit": 2})
        assert [item["id"] for item in page["data"]] == [third["id"], second["id"]]
        assert (page["total"], page["page"], page["limit"]) == (3, 1, 2)
        page = await link.call("GET", "/links", params={"limit": 2, "page": 2})
        assert [item["id"] for item in page["data"]] == [first["id"]]
        beyond = await link.call("GET", "/links", params={"limit": 2, "page": 3})
        assert (beyond["data"], beyond["total"]) == ([], 3)

        async def found(q: str) -> list[str]:
            listed = await link.call("GET", "/links", params={"q": q})
            return [item["code"] for item in listed["data"]]

        assert await found("SHOP.example") == ["promo"]
        assert await found("fall") == ["Fall"]
        assert await found("blog") == ["Fall", "post_1"]
        assert await found("100%_") == ["post_1"]  # % and _ are themselves, not wildcards
        assert await found("t_1") == ["post_1"]
        assert await found("s_") == []
        for bad in ({"limit": 101}, {"page": 0}, {"q": "a\x00"}, {"q": "a" * 201}):
            await link.call("GET", "/links", params=bad, expect=400)


async def test_changes_touch_only_the_fields_given(product_client: ProductClientFactory) -> None:
    async with open_link(product_client) as link:
        created = await link.create(
            code="old",
            title="Sale",
            tags=["mail"],
            expires_at="2030-01-01T00:00:00Z",
            expired_url="https://example.com/over",
            max_clicks=5,
        )
        path = f"/links/{created['id']}"
        assert await link.call("PATCH", path, json={}) == created
        changed = await link.call(
            "PATCH", path, json={"destination_url": "https://example.org/new", "code": "new"}
        )
        assert changed == {
            **created,
            "code": "new",
            "short_url": "http://testserver/l/new",
            "destination_url": "https://example.org/new",
            "updated_at": changed["updated_at"],
        }
        assert changed["updated_at"] > created["updated_at"]
        cleared = await link.call(
            "PATCH",
            path,
            json={
                "title": None,
                "tags": [],
                "expires_at": None,
                "expired_url": None,
                "max_clicks": None,
            },
        )
        assert [cleared[name] for name in ("title", "tags", "expires_at", "expired_url")] == [
            None,
            [],
            None,
            None,
        ]
        assert cleared["max_clicks"] is None
        await link.create(code="old")  # the old code is free again
        for body in ({"code": None}, {"destination_url": None}, {"tags": None}, {"id": "x"}):
            await link.call("PATCH", path, json=body, expect=400)
        await link.call("PATCH", path, json={"destination_url": "mailto:a@b.c"}, expect=422)
        assert await link.call("GET", path) == cleared


async def test_deleting_takes_the_clicks_and_frees_the_code(
    product_client: ProductClientFactory,
) -> None:
    async with open_link(product_client) as link:
        created = await link.create(code="gone")
        kept = await link.create(code="kept")
        ids = {"gone": await link.key(created["id"]), "kept": await link.key(kept["id"])}
        async with link.gateway.database.transaction() as session:
            for number, code in enumerate(["gone", "gone", "kept"]):
                await session.execute(
                    insert(Click).values(
                        id=f"{number:032x}",
                        link_id=ids[code],
                        account_id=link.owner.account_id,
                        clicked_at=utcnow(),
                        referrer="(direct)",
                        country="XX",
                        device="desktop",
                        visitor="0" * 32,
                        bot=False,
                    )
                )
        assert await link.call("DELETE", f"/links/{created['id']}", expect=204) is None
        await link.call("GET", f"/links/{created['id']}", expect=404)
        await link.call("DELETE", f"/links/{created['id']}", expect=404)
        async with link.gateway.database.transaction() as session:
            left = await session.execute(
                select(Click.link_id, func.count()).group_by(Click.link_id)
            )
            assert list(left) == [(ids["kept"], 1)]
        assert (await link.create(code="gone"))["code"] == "gone"


async def test_reading_needs_the_read_scope_and_writing_the_write_scope(
    product_client: ProductClientFactory,
) -> None:
    async with open_link(product_client) as link:
        reader = await link.product_client.tenant("reader", scopes=[LINKS_READ])
        await link.call("GET", "/links", by=reader)
        body = {"destination_url": "https://example.com/"}
        error = await link.call("POST", "/links", json=body, expect=403, by=reader)
        assert error == {"detail": "API key lacks the required scope 'link:links:write'"}
        response = await link.client.get(f"{LINK}/links")
        assert response.status_code == 401


async def test_short_urls_on_the_configured_base(product_client: ProductClientFactory) -> None:
    settings = {"short_link_base": "https://go.example.com/"}
    async with open_link(product_client, settings=settings) as link:
        created = await link.create(code="spring")
        assert created["short_url"] == "https://go.example.com/spring"
        assert (await link.call("GET", "/links"))["data"][0]["short_url"] == created["short_url"]


async def test_short_urls_on_the_origin_trusted_proxies_report(
    product_client: ProductClientFactory,
) -> None:
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "links.example.net"}
    async with open_link(product_client, trusted_proxies=["127.0.0.1/32"]) as link:
        created = await link.call(
            "POST",
            "/links",
            json={"destination_url": "https://example.com/", "code": "spring"},
            headers=forwarded,
            expect=201,
        )
        assert created["short_url"] == "https://links.example.net/l/spring"
    async with open_link(product_client) as link:  # the proxy is not trusted
        created = await link.call(
            "POST",
            "/links",
            json={"destination_url": "https://example.com/", "code": "spring"},
            headers={**forwarded, "Host": "attacker.example"},
            expect=201,
        )
        assert created["short_url"] == "http://testserver/l/spring"


async def test_changes_emit_their_events(product_client: ProductClientFactory) -> None:
    async with open_link(product_client) as link:
        assert set(EVENTS) == {"link.created", "link.updated", "link.deleted"}
        await subscribe(link.gateway, link.owner.account_id, list(EVENTS))
        await subscribe(link.gateway, link.other.account_id, list(EVENTS))
        created = await link.create(code="spring")
        path = f"/links/{created['id']}"
        await link.call("PATCH", path, json={})  # no change, no event
        updated = await link.call("PATCH", path, json={"title": "Spring"})
        await link.call("PATCH", path, json={"code": "v1"}, expect=422)
        await link.call("POST", "/links", json={"destination_url": "x"}, expect=422)
        await link.call("DELETE", path, expect=204)
        owner = link.owner.account_id
        assert await emitted(link.gateway) == [
            (owner, "link.created", created),
            (owner, "link.updated", updated),
            (owner, "link.deleted", updated),
        ]
