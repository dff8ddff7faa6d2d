"""What a redirect captures about a click, and what it becomes before it is stored.

The redirect only records a :class:`RawClick` (a few attribute reads, no parsing) and
hands it to :class:`tollway_link.clicks.Clicks`; everything costly (user agent rules,
the public suffix list, the country database, the visitor HMAC) runs on batches, off
the request path, in :meth:`Enricher.enrich`. All of it is offline: the rules and lists
ship inside the packages' wheels.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import ipaddress
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import msgspec
from crawlerdetect import CrawlerDetect  # type: ignore[import-untyped]
from publicsuffixlist import PublicSuffixList
from ua_parser import Domain, Parser, load_lazy_builtins
from ua_parser.regex import Resolver

from tollway import GeoIP, deployment_secret
from tollway_link.settings import LinkSettings

if TYPE_CHECKING:
    from tollway import Gateway

DIRECT = "(direct)"
"""The referrer of a click without a usable ``Referer`` (none, or not an http(s) URL)."""
QR = "(qr)"
"""The referrer of a click on a short URL carrying the QR marker."""
REFERRER_LENGTH = 255
VISITOR_LENGTH = 32
AGENT_LENGTH = 1024
"""Characters of a ``User-Agent`` classified (and cached): real agents are a few hundred
at most, and a client sending kilobytes must not make the cache hold them."""

Device = Literal["mobile", "desktop", "tablet"]

_TABLET_FAMILIES = frozenset({"iPad", "Kindle"})
_PHONE_FAMILIES = frozenset({"iPhone", "iPod", "Generic Smartphone", "Generic Feature Phone"})
_PHONE_SYSTEMS = frozenset(
    {
        *("iOS", "Windows Phone", "KaiOS", "BlackBerry OS", "Bada", "Tizen", "webOS"),
        *("Symbian OS", "Symbian^3", "BREW", "Brew MP", "Nokia Series 40"),
        *("Firefox OS", "Maemo", "MeeGo"),
    }
)
"""ua-parser's names of the systems that run only on phones (iPadOS reports as iOS:
an iPad is recognised by its device family first)."""

_PREVIEW_FETCHERS = re.compile(r"Bluesky Cardyb|ZulipURLPreview")
"""Link preview fetchers crawlerdetect's list does not know (Bluesky, Zulip); it knows
Slackbot, facebookexternalhit, Twitterbot, Discordbot, WhatsApp, TelegramBot,
LinkedInBot, Skype, Teams, iMessage, Mastodon, Pinterest, Reddit, Snapchat..."""


class RawClick(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """One redirect as it happened; compact on the Redis stream (``array_like``)."""

    id: str
    """Given by the redirect (its time in µs, then 8 random bytes, as 32 hex
    characters): storing the click twice stores it once."""
    link_id: int
    account_id: int
    at: float
    """Epoch seconds."""
    address: str
    """The client address (trusted proxies applied); never stored."""
    user_agent: str
    referer: str
    """The ``Referer`` header, or empty."""
    qr: bool
    """The short URL carried the QR marker (``?qr=1``)."""
    head: bool
    """A ``HEAD`` request: stored, never counted."""


TURN = 0.002
"""Seconds :meth:`Enricher.enrich_in_turns` works before it lets the event loop run."""
TURN_CLICKS = 16
"""Clicks enriched between two looks at the clock: 16 new user agents (the worst case,
about 330 µs each) still take only about 5 ms, the interval at which Python hands the
GIL from thread to thread."""


class Enricher:
    """Turns batches of :class:`RawClick` into ``link_clicks`` rows: one per gateway
    (:meth:`for_gateway`), holding the visitor key and the country lookup. ``enrich``
    is pure CPU work, safe to run on a worker thread."""

    def __init__(self, secret: str, geoip: GeoIP) -> None:
        self._visitor_key = hmac.new(secret.encode(), digestmod=hashlib.sha256)
        self._geoip = geoip

    @classmethod
    async def for_gateway(cls, gateway: Gateway) -> Enricher:
        """The gateway's enricher, keyed with ``visitor_secret`` or else the deployment
        secret ``link.visitors``. The rule sets and the country lookup load on a worker
        thread (a few hundred milliseconds the first time in a process)."""
        settings = gateway.product_settings(LinkSettings)
        secret = settings.visitor_secret or await deployment_secret(
            gateway.database, "link.visitors"
        )

        def load() -> Enricher:
            for rules in (_agents, _suffixes, _crawlers):
                rules()
            return cls(secret, gateway.geoip)

        return await asyncio.to_thread(load)

    def enrich(self, clicks: Sequence[RawClick]) -> list[dict[str, Any]]:
        """One row per click, keyed by the ``link_clicks`` columns, in order."""
        rows = []
        for click in clicks:
            device, crawler = agent(click.user_agent[:AGENT_LENGTH])
            rows.append(
                {
                    "id": click.id,
                    "link_id": click.link_id,
                    "account_id": click.account_id,
                    "clicked_at": datetime.fromtimestamp(click.at, UTC),
                    "referrer": referrer(click.referer, qr=click.qr),
                    "country": self._geoip.country(click.address),
                    "device": device,
                    "visitor": self.visitor(click.address, click.user_agent),
                    "bot": crawler or click.head,
                }
            )
        return rows

    async def enrich_in_turns(self, clicks: Sequence[RawClick]) -> list[dict[str, Any]]:
        """:meth:`enrich` on the event loop, letting it run about every :data:`TURN`
        seconds, so a batch of thousands never holds a redirect up for long.

        Not on a worker thread: enriching holds the GIL either way, so a thread takes
        the loop's time all the same, in slices the loop does not choose, and every
        batch crosses between threads twice. (Cached agents and referrers make a click
        a few microseconds.)"""
        rows: list[dict[str, Any]] = []
        turn = time.perf_counter()
        for start in range(0, len(clicks), TURN_CLICKS):
            rows += self.enrich(clicks[start : start + TURN_CLICKS])
            if time.perf_counter() - turn >= TURN:
                await asyncio.sleep(0)
                turn = time.perf_counter()
        return rows

    def visitor(self, address: str, user_agent: str) -> str:
        """The keyed HMAC-SHA256 of (address, user agent), hex, 128 bits: the same for
        one client every day, unknowable without the key, never reversible to the
        address."""
        digest = self._visitor_key.copy()
        digest.update(f"{address}\n{user_agent}".encode())
        return digest.hexdigest()[:VISITOR_LENGTH]


def referrer(referer: str, *, qr: bool = False) -> str:
    """What a click's referrer is stored as: ``(qr)`` for the QR marker, ``(direct)``
    without a usable ``Referer``, else the referring site (see :func:`site`)."""
    return QR if qr else _referrer(referer)


@functools.lru_cache(maxsize=4096)
def _referrer(referer: str) -> str:
    # Cached per Referer: clicks repeat a few (a page linking to the short URL), and
    # taking a URL apart costs more than the rest of a click's enrichment.
    host = referring_host(referer)
    return DIRECT if host is None else site(host)


def referring_host(referer: str) -> str | None:
    """The lower-case host of an http(s) ``Referer``; ``None`` for none, another scheme
    (``android-app://``...) or one that does not parse."""
    try:
        parts = urlsplit(referer.strip())
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host or not host.isprintable():
        # A control character is in no host name, and PostgreSQL's text holds no NUL.
        return None
    return host.rstrip(".") or None


@functools.lru_cache(maxsize=4096)
def site(host: str) -> str:
    """The registrable domain (eTLD+1) of ``host`` by the Public Suffix List, private
    section included: ``l.facebook.com`` -> ``facebook.com``, ``news.bbc.co.uk`` ->
    ``bbc.co.uk``, ``alice.github.io`` stays itself. An IP literal stays the address;
    a host that is itself a public suffix (``localhost``) stays the host."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    return (_suffixes().privatesuffix(host) or host)[:REFERRER_LENGTH]


@functools.lru_cache(maxsize=4096)
def agent(user_agent: str) -> tuple[Device, bool]:
    """``(device class, bot)`` of a ``User-Agent``. No agent at all is a bot: every
    browser sends one. A client the rules do not place is a desktop."""
    if not user_agent.strip():
        return "desktop", True
    crawler = bool(_crawlers().is_crawler(user_agent)) or bool(_PREVIEW_FETCHERS.search(user_agent))
    return device(user_agent), crawler


def device(user_agent: str) -> Device:
    """``mobile``, ``tablet`` or ``desktop`` from ua-parser's device and system, and the
    ``Mobi`` token browsers put in phones' agents (Android tablets' lack it)."""
    parsed = _agents()(user_agent, Domain.DEVICE | Domain.OS)
    family = parsed.device.family if parsed.device else ""
    system = parsed.os.family if parsed.os else ""
    if family in _TABLET_FAMILIES or "Tablet" in family:
        return "tablet"
    if system == "Android" or "Android" in user_agent:
        return "mobile" if "Mobi" in user_agent else "tablet"
    if "Mobi" in user_agent or family in _PHONE_FAMILIES or system in _PHONE_SYSTEMS:
        return "mobile"
    return "desktop"


# The rule sets: loaded once per process, on first use, and only read afterwards. The
# results are cached per user agent and per host (above): batches repeat both.


@functools.cache
def _agents() -> Parser:
    return Parser(Resolver(load_lazy_builtins()))


@functools.cache
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList()


@functools.cache
def _crawlers() -> CrawlerDetect:
    return CrawlerDetect()
