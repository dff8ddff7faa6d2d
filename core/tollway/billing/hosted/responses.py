"""A hosted card page's answers: an HTML page, or a 303 onward.

Every one is ``Cache-Control: no-store``, sends no Referer onward, and a page is never
framed (``X-Frame-Options: DENY``, ``frame-ancestors 'none'``) and carries a
Content-Security-Policy allowing nothing but its inline style and posting its form to
itself (and the redirect after it to where the page sends the visitor on, which
Chromium checks against ``form-action`` too).
"""

from __future__ import annotations

from collections.abc import Sequence

from litestar.response.base import ASGIResponse
from litestar.status_codes import HTTP_303_SEE_OTHER

from tollway.billing.hosted.html import STYLE_SOURCE
from tollway.billing.hosted.urls import csp_origin

NO_FORM = "'none'"
"""The ``form-action`` of a page without a form."""


def form_action(then: str | None) -> str:
    """The ``form-action`` of a page whose form posts to itself and is then sent on to
    ``then`` (a URL :func:`~tollway.billing.hosted.return_url` accepted), if any."""
    return f"'self' {csp_origin(then)}" if then else "'self'"


def page(
    body: bytes,
    status: int,
    form_action: str = NO_FORM,
    headers: Sequence[tuple[str, str]] = (),
) -> ASGIResponse:
    """An HTML page with the security headers, and ``headers`` (its cookie)."""
    policy = (
        f"default-src 'none'; style-src {STYLE_SOURCE}; form-action {form_action}; "
        "frame-ancestors 'none'; base-uri 'none'"
    )
    sent = [
        ("cache-control", "no-store"),
        ("content-security-policy", policy),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
        *headers,
    ]
    return ASGIResponse(body=body, status_code=status, media_type="text/html", headers=sent)


def redirect(location: str) -> ASGIResponse:
    """303 to ``location``: where a posted form sends the browser on."""
    return ASGIResponse(
        status_code=HTTP_303_SEE_OTHER,
        headers=[
            ("location", location),
            ("cache-control", "no-store"),
            ("referrer-policy", "no-referrer"),
        ],
    )
