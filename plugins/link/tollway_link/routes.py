"""HTTP handlers of the short links API (``/v1/link``).

A reading handler receives ``link_reads``, the caller's account read without a
transaction; a writing one receives ``links``, the caller's account in the request's
transaction (:func:`provide_links`), committed once the handler has made its answer.
Another account's link is answered 404, like an unknown one. Records show short URLs
on the base :class:`~tollway_link.addresses.Addresses` gives for the request.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, PathParameter, QueryParameter
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import CurrentCaller, CurrentGateway, ListPage, Page, Reads, offset, page_limit
from tollway_link import schemas
from tollway_link.addresses import Addresses
from tollway_link.product import LINKS_READ, LINKS_WRITE
from tollway_link.queries import LinkReads
from tollway_link.service import Links
from tollway_link.targets import Targets

LinkId = Annotated[
    str, PathParameter(pattern="^lnk_[0-9A-Za-z]{16}$", description="The link's id.")
]
"""A link's id in the path; any other string is refused (400) before a lookup."""
Search = Annotated[
    str,
    QueryParameter(
        max_length=200,
        pattern="^[^\\x00]*$",
        description="A substring of the code or the destination, matched ignoring case.",
    ),
]


def provide_links(
    request: Request[Any, Any, Any],
    transaction: NamedDependency[AsyncSession],
    caller: CurrentCaller,
    gateway: CurrentGateway,
    addresses: NamedDependency[Addresses],
    targets: NamedDependency[Targets],
) -> Links:
    """The caller's account in the request's transaction (the ``links`` dependency)."""
    return Links(
        transaction,
        caller.principal.account_id,
        gateway.webhooks,
        addresses,
        addresses.short_url_base(request.scope),
        targets.forget,
    )


def provide_link_reads(
    request: Request[Any, Any, Any],
    reads: NamedDependency[Reads],
    caller: CurrentCaller,
    addresses: NamedDependency[Addresses],
) -> LinkReads:
    """The caller's account for reading (the ``link_reads`` dependency): no transaction."""
    return LinkReads(reads, caller.principal.account_id, addresses.short_url_base(request.scope))


@get("/links", scope=LINKS_READ)
async def list_links(
    link_reads: NamedDependency[LinkReads],
    q: Search = "",
    page: Page = 1,
    limit: Annotated[int, page_limit(100)] = 25,
) -> ListPage[schemas.Link]:
    """Newest first; ``q`` matches a substring of the code or the destination."""
    data, total = await link_reads.list_links(q, offset=offset(page, limit), limit=limit)
    return ListPage(data=data, total=total, page=page, limit=limit)


@post("/links", scope=LINKS_WRITE)
async def create_link(
    data: JSONBody[schemas.LinkCreate], links: NamedDependency[Links]
) -> schemas.Link:
    return await links.create(data)


@get("/links/{link_id:str}", scope=LINKS_READ)
async def get_link(link_id: LinkId, link_reads: NamedDependency[LinkReads]) -> schemas.Link:
    return await link_reads.link(link_id)


@patch("/links/{link_id:str}", scope=LINKS_WRITE)
async def update_link(
    link_id: LinkId, data: JSONBody[schemas.LinkUpdate], links: NamedDependency[Links]
) -> schemas.Link:
    return await links.update(link_id, data)


@delete("/links/{link_id:str}", scope=LINKS_WRITE)
async def delete_link(link_id: LinkId, links: NamedDependency[Links]) -> None:
    """The link and its clicks; its code is free again."""
    await links.delete(link_id)


ROUTES = [list_links, create_link, get_link, update_link, delete_link]
