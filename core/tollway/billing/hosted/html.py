"""The HTML of hosted card pages: the card form and the pages saying why there is none.

Pages load nothing from anywhere and run no script: one inline style, allowed by its
hash in the page's Content-Security-Policy (:data:`STYLE_SOURCE`). Everything that
comes from an account or a visitor (names, URLs, the name on the card) is escaped; a
typed card number or security code is never written back.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape

from tollway.billing.money import money

STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:30rem;margin:8vh auto;padding:0 1rem;"
    "color:#1f2328}h1{font-size:1.5rem;margin-bottom:.25rem}.price{font-size:1.25rem;"
    "margin:0}.trial{color:#1a7f37;margin:0}ul{padding-left:1.25rem}form{display:grid;"
    "gap:.75rem;margin-top:1.5rem}label{display:grid;gap:.25rem;font-weight:600}"
    "input{font:inherit;padding:.5rem;border:1px solid #8c959f;border-radius:6px}"
    "button{font:inherit;font-weight:600;padding:.6rem;border:0;border-radius:6px;"
    "background:#0969da;color:#fff;cursor:pointer}.error{color:#cf222e;font-weight:600}"
    ".cancel{display:inline-block;margin-top:1rem}"
)
STYLE_SOURCE = f"'sha256-{base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()}'"
"""The CSP source allowing :data:`STYLE` and no other style."""

_CARD_FIELDS = (
    '<label for="card-number">Card number</label>'
    '<input id="card-number" name="card_number" inputmode="numeric" '
    'autocomplete="cc-number" maxlength="23" required>'
    '<label for="card-expiry">Expiry (MM/YY)</label>'
    '<input id="card-expiry" name="expiry" autocomplete="cc-exp" placeholder="MM/YY" '
    'maxlength="7" required>'
    '<label for="card-cvc">CVC</label>'
    '<input id="card-cvc" name="cvc" inputmode="numeric" autocomplete="cc-csc" '
    'maxlength="4" required>'
    '<label for="card-name">Name on card</label>'
)
"""The form's card fields (:class:`~tollway.billing.hosted.PaymentForm`'s names) up to
the name on the card, whose input carries what was typed."""


def price(amount_cents: int, currency: str, interval: str) -> str:
    """``$19.00 / month``, ``¥1,900 / month``."""
    return f"{money(amount_cents, currency)} / {interval}"


def document(title: str, body: str) -> bytes:
    """A whole page: ``title`` (escaped here) and ``body`` (HTML, escaped by the caller)."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="robots" content="noindex"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}</body></html>"
    ).encode()


def card_form(
    title: str,
    heading: str,
    *,
    button: str,
    back: tuple[str, str] | None,
    csrf_token: str,
    error: str | None,
    name_on_card: str,
) -> bytes:
    """The card form posting back to the page's own URL, under ``heading`` (HTML the
    caller escaped: what the form is for); ``error`` (the processor's message, or what
    is missing) is shown above it, ``back`` is ``(url, label)`` of the way out."""
    alert = f'<p class="error" role="alert">{escape(error)}</p>' if error else ""
    way_out = f'<a class="cancel" href="{escape(back[0])}">{escape(back[1])}</a>' if back else ""
    body = (
        f"<main>{heading}{alert}"
        '<form method="post" autocomplete="on">'
        f'<input type="hidden" name="csrf_token" value="{escape(csrf_token)}">{_CARD_FIELDS}'
        '<input id="card-name" name="name" autocomplete="cc-name" maxlength="200" '
        f'value="{escape(name_on_card)}">'
        f'<button type="submit">{escape(button)}</button></form>{way_out}</main>'
    )
    return document(title, body)


def message_page(title: str, text: str, link: tuple[str, str] | None = None) -> bytes:
    """A page saying why there is no form; ``link`` is ``(url, label)`` onward."""
    onward = f'<p><a href="{escape(link[0])}">{escape(link[1])}</a></p>' if link else ""
    return document(title, f"<main><h1>{escape(title)}</h1><p>{escape(text)}</p>{onward}</main>")
