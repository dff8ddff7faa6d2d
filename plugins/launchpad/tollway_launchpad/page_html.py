"""The hosted checkout's HTML: the offer above the kit's card form
(:func:`tollway.billing.hosted.card_form`). Everything a workspace wrote (plan names,
features, URLs) is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from tollway.billing.hosted import card_form, price

PAY = "Pay"
"""The form's button, with or without a trial."""


@dataclass(frozen=True, slots=True)
class Offer:
    """What the form sells: one plan at one price."""

    plan_name: str
    amount_cents: int
    currency: str
    interval: str
    trial_days: int
    features: Sequence[str]
    cancel_url: str


def checkout_form(offer: Offer, *, csrf_token: str, error: str | None, name_on_card: str) -> bytes:
    """The offer (name, price, trial, features) and the card form paying it, with a link
    back to the session's ``cancel_url``."""
    features = "".join(f"<li>{escape(feature)}</li>" for feature in offer.features)
    trial = f'<p class="trial">{offer.trial_days}-day free trial</p>' if offer.trial_days else ""
    heading = (
        f"<h1>{escape(offer.plan_name)}</h1>"
        f'<p class="price">{escape(price(offer.amount_cents, offer.currency, offer.interval))}</p>'
        f"{trial}{f'<ul>{features}</ul>' if features else ''}"
    )
    return card_form(
        f"Checkout: {offer.plan_name}",
        heading,
        button=PAY,
        back=(offer.cancel_url, "Cancel and go back"),
        csrf_token=csrf_token,
        error=error,
        name_on_card=name_on_card,
    )
