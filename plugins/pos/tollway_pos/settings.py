"""``[products.pos.settings]``: what an operator can configure (operations.md documents
each setting). Every store uses them; prices are in ``currency``'s minor units."""

from __future__ import annotations

from itertools import pairwise
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec

MAX_BPS = 10_000


class LoyaltyTier(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """A tier a customer reaches with ``min_points``; it takes ``discount_bps``
    (hundredths of a percent) off their carts and orders."""

    name: str
    min_points: int
    discount_bps: int = 0


def _default_tiers() -> list[LoyaltyTier]:
    return [
        LoyaltyTier(name="bronze", min_points=0),
        LoyaltyTier(name="silver", min_points=500, discount_bps=200),
        LoyaltyTier(name="gold", min_points=2_000, discount_bps=500),
    ]


class PosSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every field is optional."""

    currency: str = "usd"
    """The currency of every price, order and report (lowercase)."""
    tax_bps: int = 0
    """Sales tax on what an order costs after its discounts, in hundredths of a percent
    (``825`` is 8.25%); the delivery fee is not taxed."""
    delivery_fee_cents: int = 0
    """What a ``delivery`` order adds; a cart calculation takes ``delivery_fee_cents``
    from its request instead."""
    timezone: str = "UTC"
    """The stores' IANA time zone: a report's days, weeks and months are its calendar's."""
    low_stock_threshold: int = 5
    """A new product's low-stock threshold unless it gives its own."""
    points_per_unit: int = 1
    """Loyalty points a delivered order earns per whole currency unit of its total."""
    loyalty_tiers: list[LoyaltyTier] = msgspec.field(default_factory=_default_tiers)
    """From the lowest; the first must start at 0 points."""
    customer_token_ttl: int = 24 * 60 * 60
    """Seconds a customer token from register or login is valid."""
    realtime_token_ttl: int = 60 * 60
    """Seconds a realtime token (the live streams' credential) is valid."""
    stream_max_seconds: int = 3_600
    """The longest a live stream stays open; clients reconnect."""

    def __post_init__(self) -> None:
        if len(self.currency) != 3 or not self.currency.isalpha() or not self.currency.islower():
            raise ValueError("currency must be a lowercase three-letter code, e.g. 'usd'")
        if not 0 <= self.tax_bps <= MAX_BPS:
            raise ValueError("tax_bps must be between 0 and 10000")
        if self.delivery_fee_cents < 0 or self.low_stock_threshold < 0:
            raise ValueError("delivery_fee_cents and low_stock_threshold must not be negative")
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"timezone {self.timezone!r} is not an IANA time zone") from None
        if not 0 <= self.points_per_unit <= 1_000:
            raise ValueError("points_per_unit must be between 0 and 1000")
        tiers = self.loyalty_tiers
        if not tiers or tiers[0].min_points != 0:
            raise ValueError("loyalty_tiers must start with a tier at 0 points")
        if any(a.min_points >= b.min_points for a, b in pairwise(tiers)):
            raise ValueError("loyalty_tiers must be in increasing order of min_points")
        if any(not 0 <= tier.discount_bps <= MAX_BPS for tier in tiers):
            raise ValueError("a loyalty tier's discount_bps must be between 0 and 10000")
        for ttl, name in (
            (self.customer_token_ttl, "customer_token_ttl"),
            (self.realtime_token_ttl, "realtime_token_ttl"),
        ):
            if not 60 <= ttl <= 30 * 24 * 60 * 60:
                raise ValueError(f"{name} must be between 60 seconds and 30 days")
        if not 1 <= self.stream_max_seconds <= 24 * 60 * 60:
            raise ValueError("stream_max_seconds must be between 1 and 86400")

    def tier(self, points: int) -> LoyaltyTier:
        """The highest tier ``points`` reach."""
        reached = self.loyalty_tiers[0]
        for tier in self.loyalty_tiers:
            if points >= tier.min_points:
                reached = tier
        return reached
