"""The redirect host over HTTP: 302 without a key, the HTML 404 and 410, expired links,
``max_clicks``, ``HEAD``, the click each redirect queues, the limit per client address,
the process's cache forgetting changed links, and the host of ``short_link_base``."""

from __future__ import annotations

import re
import time

import httpx
from link_client import open_link
from sqlalchemy import delete, select, update

from tollway.testing import ProductClientFactory
from tollway_link.clicks import Clicks
from tollway_link.models import Click, Link
from tollway_link.product import REDIRECTS
from tollway_link.redirects import GONE_PAGE, NOT_FOUND_PAGE
from tollway_link.targets import Targets

BROWSER = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36"
)
CRAWLER = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
FEW_REDIRECTS = {REDIRECTS.name: {"plans": {"anonymous": {"limits": {"redirects_per_minute": 2}}}}}


async def test_a_visitor_is_sent_to_the_destination(product_client: ProductClientFactory) -> None:
    async with open_link(product_client) as link:
        created = await link.create("https://example.com/spring?utm_source=mail", code="spring")
        before = time.time()
        response = await link.follow(
            "/l/spring?qr=1",
            headers={"User-Agent": BROWSER, "Referer": "https://l.facebook.com/x"},
        )
        assert response.status_code == 302
        assert response.headers["location"] == "https://example.com/spring?utm_source=mail"
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["x-ratelimit-limit"] == "600"
        assert response.content == b""
        assert response.headers["content-length"] == "0"
        [click] = link.clicks
        assert before <= click.at <= time.time()
        assert re.fullmatch("[0-9a-f]{32}", click.id)
        key = (click.link_id, click.account_id)
        assert key == (await link.key(created["id"]), link.owner.account_id)
        assert (click.address, click.user_agent, click.referer) == (
            "127.0.0.1",
            BROWSER,
            "https://l.facebook.com/x",
        )
        assert (click.qr, click.head) == (True, False)
        await link.follow("/l/spring?utm=x&qr=10")
        await link.follow("/l/spring")
        assert [(c.qr, c.user_agent, c.referer) for c in link.clicks[1:]] == [
            (False, f"python-httpx/{httpx.__version__}", ""),
        ] * 2
        assert len({c.id for c in link.clicks}) == 3


async def test_clicks_are_stored_and_only_people_counted(
    product_client: ProductClientFactory,
) -> None:
    async with open_link(product_client) as link:
        created = await link.create(code="spring")
        await link.follow("/l/spring", headers={"User-Agent": BROWSER})
        await link.client.head("/l/spring", headers={"User-Agent": BROWSER})
        await link.follow("/l/spring", headers={"User-Agent": CRAWLER})
        await link.gateway.service(Clicks).flush()
        assert (await link.call("GET", f"/links/{created['id']}"))["clicks"] == 1
        async with link.gateway.database.transaction() as session:
            stored = await session.execute(select(Click.id, Click.bot).order_by(Click.bot))
            assert sorted(stored) == sorted(
                [(click.id, click.head or click.user_agent == CRAWLER) for click in link.clicks]
            )


async def test_max_clicks_counts_the_stored_clicks(product_client: ProductClientFactory) -> None:
    """Read anew for each redirect (a TTL of 0), a link is out of clicks once they are
    stored; the process's own redirects since it last read the link count too."""
    async with open_link(product_client, settings={"redirect_cache_ttl": 0}) as link:
        await link.create(code="twice", max_clicks=2)
        clicks = link.gateway.service(Clicks)
        person = {"User-Agent": BROWSER}
        for _ in range(2):
            assert (await link.follow("/l/twice", headers=person)).status_code == 302
            await clicks.flush()
        assert (await link.follow("/l/twice", headers=person)).status_code == 410


async def test_unknown_codes_answer_an_html_page(product_client: ProductClientFactory) -> None:
    async with open_link(product_client) as link:
        await link.create(code="spring")
        for path in ("/l/Spring", "/l/nothing-here", "/l/healthz", "/l/a.b", "/l/" + "a" * 65):
            response = await link.follow(path)
            assert response.status_code == 404, path
            assert response.headers["content-type"] == "text/html; charset=utf-8"
            assert response.headers["cache-control"] == "no-store"
            assert response.content == NOT_FOUND_PAGE
        page = NOT_FOUND_PAGE.decode()
        assert "<title>Link not found</title>" in page
        assert not re.search(r"src=|href=|url\(|@import", page)  # loads nothing
        assert link.clicks == []


async def test_an_expired_link(product_client: ProductClientFactory) -> None:
    async with open_link(product_client) as link:
        await link.create(code="over", expires_at="2020-01-01T00:00:00Z")
        await link.create(
            code="moved", expires_at="2020-01-01T00:00:00Z", expired_url="https://example.com/end"
        )
        await link.create(code="later", expires_at="2100-01-01T00:00:00Z")
        gone = await link.follow("/l/over")
        assert (gone.status_code, gone.content) == (410, GONE_PAGE)
        assert gone.headers["cache-control"] == "no-store"
        assert gone.headers["content-type"] == "text/html; charset=utf-8"
        moved = await link.follow("/l/moved")
        assert moved.status_code == 302
        assert moved.headers["location"] == "https://example.com/end"
        assert moved.headers["cache-control"] == "no-store"
        assert link.clicks == []  # visits to an expired link are no clicks
        assert (await link.follow("/l/later")).status_code == 302
        assert len(link.clicks) == 1


async def test_max_clicks_and_head(product_client: ProductClientFactory) -> None:
    async with open_link(product_client) as link:
        await link.create(code="twice", max_clicks=2, expired_url="https://example.com/sold-out")
        await link.create(code="once", max_clicks=1)
        head = await link.client.head("/l/twice")
        assert (head.status_code, head.content) == (302, b"")
        assert head.headers["location"] == "https://example.com/"
        for _ in range(2):
            assert (await link.follow("/l/twice")).headers["location"] == "https://example.com/"
        head = await link.client.head("/l/twice")
        assert head.headers["location"] == "https://example.com/sold-out"
        assert (await link.follow("/l/twice")).headers["location"] == (
            "https://example.com/sold-out"
        )
        assert (await link.follow("/l/once")).status_code == 302
        gone = await link.follow("/l/once")
        assert (gone.status_code, gone.content) == (410, GONE_PAGE)
        gone = await link.client.head("/l/once")
        assert (gone.status_code, gone.content) == (410, b"")
        unknown = await link.client.head("/l/nothing")
        assert (unknown.status_code, unknown.content) == (404, b"")
        assert [click.head for click in link.clicks] == [True, False, False, False]


async def test_each_client_address_has_its_window(product_client: ProductClientFactory) -> None:
    async with open_link(
        product_client, products=FEW_REDIRECTS, trusted_proxies=["127.0.0.1/32"]
    ) as link:
        await link.create(code="spring")
        for _ in range(2):
            assert (await link.follow("/l/spring")).status_code == 302
        refused = await link.follow("/l/spring")
        assert refused.status_code == 429
        assert refused.json() == {
            "detail": f"Too many redirects from your address (2 a minute); retry after "
            f"{refused.headers['retry-after']} s"
        }
        assert int(refused.headers["retry-after"]) > 0
        assert (await link.follow("/l/unknown")).status_code == 429  # made-up codes count
        forwarded = {"X-Forwarded-For": "203.0.113.7"}
        assert (await link.follow("/l/spring", headers=forwarded)).status_code == 302
        assert [click.address for click in link.clicks] == ["127.0.0.1"] * 2 + ["203.0.113.7"]
        assert (await link.call("GET", "/links"))["total"] == 1  # keys are not limited here


async def test_a_forwarded_address_is_believed_only_from_trusted_proxies(
    product_client: ProductClientFactory,
) -> None:
    async with open_link(product_client, products=FEW_REDIRECTS) as link:
        await link.create(code="spring")
        for address in ("203.0.113.7", "203.0.113.8", "203.0.113.9"):
            response = await link.follow("/l/spring", headers={"X-Forwarded-For": address})
            assert response.status_code == (302 if address != "203.0.113.9" else 429)
        assert {click.address for click in link.clicks} == {"127.0.0.1"}


async def test_changes_reach_this_process_at_once(product_client: ProductClientFactory) -> None:
    async with open_link(product_client, settings={"redirect_cache_ttl": 3600}) as link:
        assert (await link.follow("/l/spring")).status_code == 404
        created = await link.create("https://example.com/a", code="spring")
        path = f"/links/{created['id']}"
        assert (await link.follow("/l/spring")).headers["location"] == "https://example.com/a"
        await link.call("PATCH", path, json={"destination_url": "https://example.com/b"})
        assert (await link.follow("/l/spring")).headers["location"] == "https://example.com/b"
        await link.call("PATCH", path, json={"code": "summer"})
        assert (await link.follow("/l/spring")).status_code == 404
        assert (await link.follow("/l/summer")).headers["location"] == "https://example.com/b"
        await link.call("PATCH", path, json={"expires_at": "2020-01-01T00:00:00Z"})
        assert (await link.follow("/l/summer")).status_code == 410
        await link.call("DELETE", path, expect=204)
        assert (await link.follow("/l/summer")).status_code == 404


async def test_a_refused_change_keeps_what_is_cached(product_client: ProductClientFactory) -> None:
    async with open_link(product_client, settings={"redirect_cache_ttl": 3600}) as link:
        created = await link.create("https://example.com/a", code="spring")
        await link.create(code="taken")
        assert (await link.follow("/l/spring")).status_code == 302
        body = {"destination_url": "https://example.com/b", "code": "taken"}
        await link.call("PATCH", f"/links/{created['id']}", json=body, expect=409)
        assert (await link.follow("/l/spring")).headers["location"] == "https://example.com/a"


async def test_redirects_answer_from_memory_for_the_ttl(
    product_client: ProductClientFactory,
) -> None:
    """A change made by another process (here, straight in the database) is not read
    while the code is cached: redirects do not read the database; with a TTL of 0 they
    read it every time."""
    for ttl, expected in ((3600, "https://example.com/a"), (0, "https://example.com/b")):
        async with open_link(product_client, settings={"redirect_cache_ttl": ttl}) as link:
            await link.create("https://example.com/a", code="spring")
            assert (await link.follow("/l/spring")).headers["location"] == "https://example.com/a"
            async with link.gateway.database.transaction() as session:
                await session.execute(
                    update(Link)
                    .where(Link.code == "spring")
                    .values(destination_url="https://example.com/b")
                )
            assert (await link.follow("/l/spring")).headers["location"] == expected


async def test_the_short_link_host_serves_codes_at_its_root(
    product_client: ProductClientFactory,
) -> None:
    settings = {"short_link_base": "https://go.example.com"}
    async with open_link(product_client, settings=settings) as link:
        assert link.gateway.registry.hosts == {"go.example.com": "/l"}
        created = await link.create("https://example.com/spring", code="spring")
        assert created["short_url"] == "https://go.example.com/spring"
        for host in ("go.example.com", "GO.Example.COM:8443", "go.example.com."):
            response = await link.follow("/spring", headers={"Host": host})
            assert response.headers["location"] == "https://example.com/spring", host
            assert (await link.follow("/l/spring", headers={"Host": host})).status_code == 302
        missing = await link.follow("/nothing", headers={"Host": "go.example.com"})
        assert (missing.status_code, missing.content) == (404, NOT_FOUND_PAGE)
        # The gateway's own paths stay its own on that host.
        health = await link.client.get("/healthz", headers={"Host": "go.example.com"})
        assert health.status_code == 200
        listed = await link.call("GET", "/links", headers={"Host": "go.example.com"})
        assert listed["total"] == 1
        # Other hosts are not moved.
        other = await link.follow("/spring", headers={"Host": "api.example.com"})
        assert other.status_code == 404
        assert other.headers["content-type"] == "application/json"
        assert len(link.clicks) == 6


async def test_a_base_with_a_path_registers_no_host(product_client: ProductClientFactory) -> None:
    settings = {"short_link_base": "https://example.com/go"}
    async with open_link(product_client, settings=settings) as link:
        assert link.gateway.registry.hosts == {}
        created = await link.create(code="spring")
        assert created["short_url"] == "https://example.com/go/spring"


async def test_codes_past_their_ttl_answer_while_one_read_refreshes_them(
    product_client: ProductClientFactory,
) -> None:
    """A cached link past its TTL still answers, and its redirect asks for a read of
    every stale code in the background; the next redirect sees what was read (a change
    or a deletion made by another process, here straight in the database)."""
    async with open_link(product_client, settings={"redirect_cache_ttl": 3600}) as link:
        for code in ("spring", "summer"):
            await link.create(f"https://example.com/{code}", code=code)
            assert (await link.follow(f"/l/{code}")).status_code == 302
        async with link.gateway.database.transaction() as session:
            await session.execute(
                update(Link)
                .where(Link.code == "spring")
                .values(destination_url="https://b.example")
            )
            await session.execute(delete(Link).where(Link.code == "summer"))
        targets = link.gateway.service(Targets)
        for code in ("spring", "summer"):
            targets.known[code].fresh_until = time.monotonic() - 1  # past its TTL
        # Still answered from memory, while one read refreshes both codes.
        assert (await link.follow("/l/spring")).headers["location"] == "https://example.com/spring"
        assert (await link.follow("/l/summer")).headers["location"] == "https://example.com/summer"
        assert targets.refreshing is not None
        await targets.refreshing
        assert (await link.follow("/l/spring")).headers["location"] == "https://b.example"
        assert (await link.follow("/l/summer")).status_code == 404
        assert targets.refreshing is None
