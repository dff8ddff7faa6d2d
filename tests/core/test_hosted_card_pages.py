"""The hosted card page kit's parts on their own: what launchpad's checkout and the
account's "Save a card" page tests do not vary (the guard's parameters, the form's
way out, the CSP's onward origin, the visitors' window). Each page's flow is tested
through its own app (plugins/*/tests/*_page.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tollway import PublicOrigin, utcnow, visitor_access
from tollway.billing import CardDetails
from tollway.billing.hosted import (
    FormGuard,
    card,
    card_form,
    form_action,
    price,
    return_url,
)
from tollway.testing import GatewayFactory


def _scope(*headers: tuple[str, str], scheme: str = "http") -> dict[str, Any]:
    return {
        "type": "http",
        "scheme": scheme,
        "server": ("pay.example", 443 if scheme == "https" else 80),
        "client": ("127.0.0.1", 50000),
        "headers": [(name.encode(), value.encode()) for name, value in headers],
    }


def _guard(gateway: Any, cookie: str = "page_csrf", secret: str = "page_forms") -> FormGuard:
    return FormGuard(
        gateway.database, PublicOrigin(), cookie=cookie, prefix="/pages", secret=secret
    )


async def test_a_guard_accepts_only_its_own_cookie_token_and_origin(
    gateway_factory: GatewayFactory,
) -> None:
    gateway = await gateway_factory()
    guard = _guard(gateway)
    nonce = guard.nonce(_scope())
    token = await guard.token("subject", nonce)
    cookie = ("cookie", f"other=1; page_csrf={nonce}")
    own = _scope(cookie, ("sec-fetch-site", "same-origin"))
    assert await guard.verified_nonce(own, "subject", {"csrf_token": token}) == nonce
    assert await guard.verified_nonce(own, "another", {"csrf_token": token}) is None
    refused = [
        _scope(("cookie", f"checkout_csrf={nonce}"), ("sec-fetch-site", "same-origin")),
        _scope(cookie, ("sec-fetch-site", "same-site")),
        _scope(cookie, ("origin", "https://pay.example.evil")),
    ]
    for scope in refused:
        assert await guard.verified_nonce(scope, "subject", {"csrf_token": token}) is None
    # A page of another product signs with a secret of its own.
    other = _guard(gateway, secret="other_forms")
    assert await other.token("subject", nonce) != token
    assert guard.nonce(own) == nonce  # kept, for a second tab


async def test_a_guards_cookie_is_the_pages_own(gateway_factory: GatewayFactory) -> None:
    gateway = await gateway_factory()
    guard = _guard(gateway, cookie="cards_csrf")
    expires_at = utcnow() + timedelta(minutes=10)
    name, value = guard.set_cookie(_scope(), "abc", "n" * 22, expires_at)
    parts = [part.strip() for part in value.split(";")]
    assert name == "set-cookie"
    assert parts[:2] == ["cards_csrf=" + "n" * 22, "Path=/pages/abc"]
    assert 590 <= int(parts[2].removeprefix("Max-Age=")) <= 600
    assert {"HttpOnly", "SameSite=Strict"} <= set(parts)
    assert "Secure" not in parts
    secure = guard.set_cookie(_scope(scheme="https"), "abc", "n" * 22, expires_at)[1]
    assert secure.endswith("; Secure")


def test_the_form_action_names_where_the_form_goes_on() -> None:
    assert form_action(None) == "'self'"
    assert form_action("https://App.Example:8443/done?x=1") == "'self' https://app.example:8443"
    assert form_action(return_url("http://10.0.0.1/back", "return_url")) == (
        "'self' http://10.0.0.1"
    )


def test_a_form_without_a_way_out_has_no_link() -> None:
    page = card_form(
        "Save a card",
        "<h1>Save a card</h1>",
        button="Save <card>",
        back=None,
        csrf_token='"t"',
        error=None,
        name_on_card="",
    ).decode()
    assert "<a " not in page
    assert '<button type="submit">Save &lt;card&gt;</button>' in page
    assert 'value="&quot;t&quot;"' in page
    linked = card_form(
        "T",
        "",
        button="Pay",
        back=("https://x.example/?a=1&b=2", "Back"),
        csrf_token="t",
        error="No",
        name_on_card="",
    ).decode()
    assert '<a class="cancel" href="https://x.example/?a=1&amp;b=2">Back</a>' in linked
    assert '<p class="error" role="alert">No</p>' in linked


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"card_number": "4242 4242 4242 4242", "expiry": "1/34", "cvc": "123", "name": " A "},
            CardDetails("4242 4242 4242 4242", 1, 2034, "123", "A"),
        ),
        ({"card_number": "4242", "expiry": "12/2034", "cvc": " "}, "Fill in the card"),
        ({"card_number": "4242", "expiry": "00/34", "cvc": "1"}, "Enter the expiry date"),
    ],
)
def test_the_form_describes_a_card_or_what_is_missing(
    fields: dict[str, str], expected: CardDetails | str
) -> None:
    parsed = card({"csrf_token": "t", **fields})
    if isinstance(expected, str):
        assert isinstance(parsed, str)
        assert parsed.startswith(expected)
    else:
        assert parsed == expected


def test_visitors_are_counted_per_address_in_a_minute_window() -> None:
    access = visitor_access(
        "anonymous", "cards_per_minute", counter="cards", what="card page requests"
    )
    assert (access.key, access.anonymous) == (None, "anonymous")
    assert (access.window.limit, access.window.seconds, access.window.counter) == (
        "cards_per_minute",
        60,
        "cards",
    )


def test_a_price_without_a_symbol_names_its_currency() -> None:
    assert price(123_456, "chf", "year") == "1,234.56 CHF / year"
    assert price(1900, "eur", "month") == "€19.00 / month"
