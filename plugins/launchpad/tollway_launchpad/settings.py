"""``[products.launchpad.settings]``: what an operator can configure (operations.md
documents each setting)."""

from __future__ import annotations

import msgspec

MIN_CHECKOUT_TTL = 30 * 60
MAX_CHECKOUT_TTL = 24 * 60 * 60


class LaunchpadSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every field is optional."""

    checkout_session_ttl: int = MAX_CHECKOUT_TTL
    """Seconds a checkout session's page can be paid, 1,800 (30 minutes) to 86,400
    (24 hours, the default)."""
    currency: str = "usd"
    """The currency every workspace's plans are priced and charged in (lowercase)."""
    dunning_retry_days: list[int] = msgspec.field(default_factory=lambda: [1, 3, 5])
    """After a renewal's charge fails, the days (each counted from the previous try)
    until the next tries; the subscription is ``past_due`` in between and ``canceled``
    when the last try fails. ``[]`` cancels at the first failure."""
    customer_token_ttl: int = 24 * 60 * 60
    """Seconds a customer token from register or login is valid."""

    def __post_init__(self) -> None:
        if not MIN_CHECKOUT_TTL <= self.checkout_session_ttl <= MAX_CHECKOUT_TTL:
            raise ValueError("checkout_session_ttl must be between 1800 and 86400 seconds")
        if len(self.currency) != 3 or not self.currency.isalpha() or not self.currency.islower():
            raise ValueError("currency must be a lowercase three-letter code, e.g. 'usd'")
        if any(days < 1 for days in self.dunning_retry_days) or len(self.dunning_retry_days) > 10:
            raise ValueError("dunning_retry_days must be at most 10 whole days >= 1")
        if not 60 <= self.customer_token_ttl <= 30 * 24 * 60 * 60:
            raise ValueError("customer_token_ttl must be between 60 seconds and 30 days")
