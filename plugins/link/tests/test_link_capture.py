"""Click capture: what a redirect's raw click becomes before it is stored. Referrers by
registrable domain, device classes and bots from real user agents, the keyed visitor
id, countries through the core's GeoIP hook, and whole batches as ``link_clicks`` rows."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest

from tollway import Gateway, IptoccGeoIP, Product, hookimpl, load_settings
from tollway.testing import GatewayFactory
from tollway_link import capture
from tollway_link.capture import (
    DIRECT,
    QR,
    Enricher,
    RawClick,
    agent,
    referrer,
)
from tollway_link.models import Click
from tollway_link.product import PRODUCT
from tollway_link.settings import LinkSettings

IPHONE_SAFARI = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)
IPAD_SAFARI = (
    "Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)
ANDROID_PHONE = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.6367.82 Mobile Safari/537.36"
)
ANDROID_PHONE_REDUCED = (  # what Chrome sends since its user agent reduction
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Mobile Safari/537.36"
)
ANDROID_TABLET = (  # a Galaxy Tab S9: no "Mobile"
    "Mozilla/5.0 (Linux; Android 13; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36"
)
FIREFOX_ANDROID_TABLET = "Mozilla/5.0 (Android 14; Tablet; rv:125.0) Gecko/125.0 Firefox/125.0"
INSTAGRAM_IPHONE = (  # an in-app browser: a person, not a bot
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_3_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Mobile/15E148 Instagram 321.0.2.16.110 (iPhone15,3; iOS 17_3_1; "
    "en_US; en; scale=3.00; 1290x2796; 563459864)"
)
CHROME_WINDOWS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36"
)
SAFARI_MAC = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Safari/605.1.15"
)
FIREFOX_LINUX = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
GOOGLEBOT_SMARTPHONE = (
    "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/124.0.6367.82 Mobile Safari/537.36 "
    "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)
SLACKBOT = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
FACEBOOK = "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"
IMESSAGE = (  # Apple's link preview poses as Safari, then names the fetchers it imitates
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) "
    "Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0"
)
BLUESKY = "Mozilla/5.0 (compatible; Bluesky Cardyb/1.1; +mailto:support@bsky.app)"

JAPAN = "133.11.0.1"  # The University of Tokyo
GERMANY = "88.198.0.1"  # Hetzner Online, Nuremberg


# Referrer ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("referer", "stored"),
    [
        ("https://l.facebook.com/l.php?u=https%3A%2F%2Fexample.com&h=AT0", "facebook.com"),
        ("https://m.facebook.com/story.php?id=1", "facebook.com"),
        ("https://www.bbc.co.uk/news", "bbc.co.uk"),
        ("https://foo.co.uk/", "foo.co.uk"),
        ("https://alice.github.io/post", "alice.github.io"),  # the list's private section
        ("HTTPS://WWW.Google.COM:443/search?q=x", "google.com"),
        ("https://news.example.com./", "example.com"),
        ("https://user:secret@t.co/abc", "t.co"),
        ("http://192.0.2.10:8080/admin", "192.0.2.10"),
        ("http://[2001:DB8::1]/", "2001:db8::1"),
        ("http://localhost:3000/", "localhost"),
    ],
)
def test_a_referer_is_stored_as_its_registrable_domain(referer: str, stored: str) -> None:
    assert referrer(referer) == stored


@pytest.mark.parametrize(
    "referer",
    [
        "",
        "   ",
        "not a url",
        "android-app://com.google.android.gm/",
        "https:///path",
        "http://[::1",
        # No host has a control character, and PostgreSQL's text cannot hold NUL: a
        # stored one would fail its whole batch, again at every retry.
        "http://exa\x00mple.com/",
        "https://a\x07b.example/x",
        "http://ex\x1bample.org",
    ],
)
def test_no_usable_referer_is_direct(referer: str) -> None:
    assert referrer(referer) == DIRECT


def test_the_qr_marker_wins_over_any_referer() -> None:
    assert referrer("", qr=True) == QR
    assert referrer("https://m.facebook.com/", qr=True) == QR


def test_a_referrer_fits_its_column() -> None:
    host = ".".join(["a" * 60] * 6) + ".example"
    assert len(referrer(f"https://{host}/")) <= 255


# Device and bots --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user_agent", "device"),
    [
        (IPHONE_SAFARI, "mobile"),
        (INSTAGRAM_IPHONE, "mobile"),
        (ANDROID_PHONE, "mobile"),
        (ANDROID_PHONE_REDUCED, "mobile"),
        (IPAD_SAFARI, "tablet"),
        (ANDROID_TABLET, "tablet"),
        (FIREFOX_ANDROID_TABLET, "tablet"),
        (CHROME_WINDOWS, "desktop"),
        (SAFARI_MAC, "desktop"),
        (FIREFOX_LINUX, "desktop"),
    ],
)
def test_people_are_classed_by_device_and_are_not_bots(user_agent: str, device: str) -> None:
    assert agent(user_agent) == (device, False)


@pytest.mark.parametrize(
    "user_agent",
    [
        GOOGLEBOT,
        SLACKBOT,
        FACEBOOK,
        IMESSAGE,
        BLUESKY,
        "Twitterbot/1.0",
        "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
        "WhatsApp/2.23.20.0 A",
        "TelegramBot (like TwitterBot)",
        "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
        "curl/8.5.0",  # a script, not a person following a link
        "python-requests/2.31.0",
        "",  # every browser sends a User-Agent
    ],
)
def test_crawlers_preview_fetchers_and_scripts_are_bots(user_agent: str) -> None:
    assert agent(user_agent)[1] is True


def test_a_bot_still_has_a_device_class() -> None:
    assert agent(GOOGLEBOT_SMARTPHONE) == ("mobile", True)
    assert agent(GOOGLEBOT) == ("desktop", True)


# Batches ----------------------------------------------------------------------------


class Tokyo:
    """A GeoIP replacement: every address in Japan."""

    def country(self, address: str) -> str:
        return "JP"

    def country_name(self, code: str) -> str:
        return "Japan"

    @hookimpl
    def tollway_geoip(self, gateway: Gateway) -> Tokyo:
        return self


def _click(number: int = 0, **changes: object) -> RawClick:
    values: dict[str, object] = {
        "id": f"{number:032x}",
        "link_id": 7,
        "account_id": 3,
        "at": 1_767_225_600.25,  # 2026-01-01 00:00:00.25 UTC
        "address": JAPAN,
        "user_agent": IPHONE_SAFARI,
        "referer": "https://l.facebook.com/l.php?u=x",
        "qr": False,
        "head": False,
    }
    values.update(changes)
    return RawClick(**values)  # type: ignore[arg-type]


@pytest.fixture
def enricher() -> Enricher:
    return Enricher("a visitor key", IptoccGeoIP())


def test_a_batch_becomes_link_clicks_rows(enricher: Enricher) -> None:
    clicks = [
        _click(1),
        _click(2, address=GERMANY, user_agent=ANDROID_TABLET, referer="", qr=True),
        _click(3, address="10.1.2.3", user_agent=SLACKBOT, referer=""),
        _click(4, address="::ffff:192.168.0.9", user_agent=CHROME_WINDOWS, head=True),
        _click(5, address="::1"),
        _click(6, address="fc00::1"),
    ]
    rows = enricher.enrich(clicks)
    columns = {column.name for column in Click.__table__.columns}
    assert all(set(row) == columns for row in rows)
    assert [row["id"] for row in rows] == [click.id for click in clicks]
    first = rows[0]
    assert first["clicked_at"] == datetime(2026, 1, 1, 0, 0, 0, 250000, tzinfo=UTC)
    assert (first["link_id"], first["account_id"]) == (7, 3)
    assert [row["referrer"] for row in rows] == [
        "facebook.com",
        QR,
        DIRECT,
        "facebook.com",
        "facebook.com",
        "facebook.com",
    ]
    assert [row["country"] for row in rows] == ["JP", "DE", "XX", "XX", "XX", "XX"]
    assert [row["device"] for row in rows] == [
        "mobile",
        "tablet",
        "desktop",
        "desktop",
        "mobile",
        "mobile",
    ]
    assert [row["bot"] for row in rows] == [False, False, True, True, False, False]


@pytest.mark.parametrize(("turn", "yields"), [(0.0, True), (3600.0, False)])
async def test_a_batch_is_enriched_in_turns_that_let_the_loop_run(
    enricher: Enricher, monkeypatch: pytest.MonkeyPatch, turn: float, yields: bool
) -> None:
    monkeypatch.setattr(capture, "TURN", turn)
    clicks = [_click(number) for number in range(3 * capture.TURN_CLICKS)]
    other = asyncio.create_task(asyncio.sleep(0))
    rows = await enricher.enrich_in_turns(clicks)
    # The other task can only have run if enriching gave the loop a turn (a batch
    # under TURN seconds gives none).
    assert other.done() is yields
    assert rows == enricher.enrich(clicks)
    await other


def test_the_address_is_never_stored(enricher: Enricher) -> None:
    [row] = enricher.enrich([_click(address="203.0.113.77")])
    assert not any("203.0.113.77" in str(value) for value in row.values())


def test_the_visitor_is_the_keyed_hmac_of_address_and_agent(enricher: Enricher) -> None:
    key = hmac.new(b"a visitor key", f"{JAPAN}\n{IPHONE_SAFARI}".encode(), hashlib.sha256)
    [row] = enricher.enrich([_click()])
    assert row["visitor"] == key.hexdigest()[:32]
    same, other_agent, other_address = enricher.enrich(
        [_click(8), _click(9, user_agent=SAFARI_MAC), _click(10, address=GERMANY)]
    )
    assert same["visitor"] == row["visitor"]
    assert len({row["visitor"], other_agent["visitor"], other_address["visitor"]}) == 3
    [rekeyed] = Enricher("another key", IptoccGeoIP()).enrich([_click()])
    assert rekeyed["visitor"] != row["visitor"]


class LinkSettingsOnly:
    """The link product and its settings, without the rest of its plugin (its routes
    are not needed to enrich clicks)."""

    @hookimpl
    def tollway_register_products(self, register: Callable[[Product], None]) -> None:
        register(PRODUCT)

    @hookimpl
    def tollway_register_settings(self, register: Callable[[str, type], None]) -> None:
        register(PRODUCT.name, LinkSettings)


@asynccontextmanager
async def _link_gateway(
    gateway_factory: GatewayFactory, *plugins: tuple[str, object], **settings: str
) -> AsyncIterator[Gateway]:
    """A gateway of the link product's settings on a migrated database."""
    migrated = await gateway_factory(plugins=[])
    options = load_settings(
        environ={},
        plugins=[],
        database_url=migrated.settings.database_url,
        products={"link": {"settings": settings}},
    )
    gateway = Gateway(options, extra_plugins=[("link-settings", LinkSettingsOnly()), *plugins])
    try:
        yield gateway
    finally:
        await gateway.database.dispose()


async def test_a_gateway_enricher_uses_the_configured_key_and_the_geoip_hook(
    gateway_factory: GatewayFactory,
) -> None:
    async with _link_gateway(
        gateway_factory, ("tokyo", Tokyo()), visitor_secret="configured"
    ) as gateway:
        enricher = await Enricher.for_gateway(gateway)
    [row] = enricher.enrich([_click(address=GERMANY)])
    assert row["country"] == "JP"  # the hook's lookup, not the default's
    expected = hmac.new(b"configured", f"{GERMANY}\n{IPHONE_SAFARI}".encode(), hashlib.sha256)
    assert row["visitor"] == expected.hexdigest()[:32]


async def test_without_a_configured_key_every_process_shares_the_deployment_secret(
    gateway_factory: GatewayFactory,
) -> None:
    async with _link_gateway(gateway_factory) as gateway:
        first = await Enricher.for_gateway(gateway)
        other_process = Gateway(gateway.settings, extra_plugins=[("l", LinkSettingsOnly())])
        try:
            second = await Enricher.for_gateway(other_process)
        finally:
            await other_process.database.dispose()
    visitor = first.visitor(JAPAN, IPHONE_SAFARI)
    assert second.visitor(JAPAN, IPHONE_SAFARI) == visitor
    assert Enricher("another key", Tokyo()).visitor(JAPAN, IPHONE_SAFARI) != visitor
