"""What the short links product is: the API's descriptor and the redirect host's, the
scopes of its keys, the webhook events it emits and its plans. Routes, service and
plugin take them from here."""

from __future__ import annotations

from tollway import Plan, Product

PRODUCT = Product(name="link", prefix="/v1/link", title="Short links", contract="link.yaml")

REDIRECTS = Product(
    name="link-redirect",
    prefix="/l",
    title="Short link redirects",
    keyed=False,
    contract="link-redirect.yaml",
)
"""The redirect host: ``GET /l/<code>`` answers 302 to the link's destination, without
a key, limited per client address. With ``short_link_base`` set, the same routes answer
``/<code>`` on that base's host (see :mod:`tollway_link.redirects`)."""

LINKS_READ = "link:links:read"
LINKS_WRITE = "link:links:write"
ANALYTICS_READ = "link:analytics:read"
SCOPES = {
    LINKS_READ: "List, search and read short links",
    LINKS_WRITE: "Create, change and delete short links",
    ANALYTICS_READ: "Read the click analytics of short links",
}

LINK_CREATED = "link.created"
LINK_UPDATED = "link.updated"
LINK_DELETED = "link.deleted"
EVENTS = {
    LINK_CREATED: "A short link was created",
    LINK_UPDATED: "A short link's destination or settings changed",
    LINK_DELETED: "A short link was deleted (its code is free again)",
}

PLANS = (
    Plan("free", requests_per_day=1_000, rank=0, description="Try short links out"),
    Plan("pro", requests_per_day=50_000, rank=1, description="A team's links"),
    Plan("business", requests_per_day=500_000, rank=2, description="Links at scale"),
)

ANONYMOUS = "anonymous"
"""The redirect host's only plan: every visitor, counted per client address."""
REDIRECT_PLANS = (
    Plan(
        ANONYMOUS,
        requests_per_day=0,
        description="Visitors following short links: limits per client address",
        limits={"redirects_per_minute": 600},
    ),
)
