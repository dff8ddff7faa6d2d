"""The short links product's rules, on one account's links inside one transaction.

Every lookup is filtered by the account, so another account's link is simply not
found. Events are emitted through the webhook engine in the same transaction: they
are delivered only if the change commits. A change to a code's link makes this
process's redirects forget the code once the change has committed (any other
process's within ``redirect_cache_ttl``).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from functools import cache, partial
from typing import Any, cast

import msgspec
from sqlalchemy import Insert, Table, bindparam, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import BadRequest, Conflict, NotFound, WebhookEngine, after_commit, utcnow
from tollway_link import schemas
from tollway_link.addresses import GENERATED, Addresses
from tollway_link.models import Link
from tollway_link.product import LINK_CREATED, LINK_DELETED, LINK_UPDATED
from tollway_link.queries import ACCOUNT, LINK_COLUMNS, link_row
from tollway_link.urls import web_url

LINKS = cast(Table, Link.__table__)
PUBLIC_ID_LENGTH = 16
CODE_ATTEMPTS = 5
"""Random codes tried before giving up; each clash is one chance in billions."""

# Statements on one of the account's links. (An UPDATE is built per change, its values
# inline: an execution parameter named like a column, ``account_id``, is a value it sets.)
_OWNED = (LINKS.c.public_id == bindparam("link_id"), LINKS.c.account_id == ACCOUNT)
CURRENT = select(*LINK_COLUMNS).where(*_OWNED)
CURRENT_CODE = select(LINKS.c.code).where(*_OWNED)
DELETE = delete(LINKS).where(*_OWNED).returning(*LINK_COLUMNS)


@cache
def _insert_unless_taken(dialect: str) -> Insert:
    """``INSERT`` of a link that inserts nothing when its code is taken (rather than
    failing, which would end a PostgreSQL transaction), returning the new record."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return (
        insert(LINKS).on_conflict_do_nothing(index_elements=[LINKS.c.code]).returning(*LINK_COLUMNS)
    )


def _public_id() -> str:
    return "lnk_" + "".join(secrets.choice(GENERATED) for _ in range(PUBLIC_ID_LENGTH))


def _tags(tags: list[str]) -> list[str]:
    """Each tag without surrounding whitespace, once, in the order first given."""
    stripped = [tag.strip() for tag in tags]
    if not all(stripped):
        raise BadRequest("Invalid request body: tags must not be blank")
    return list(dict.fromkeys(stripped))


class Links:
    """One account's short links in ``session``'s transaction."""

    def __init__(
        self,
        session: AsyncSession,
        account_id: int,
        webhooks: WebhookEngine,
        addresses: Addresses,
        base: str,
        forget: Callable[[str], None],
    ) -> None:
        """Records show short URLs on ``base`` (:meth:`Addresses.short_url_base`);
        ``forget(code)`` is called once a change to the code's link has committed."""
        self.session = session
        self.account_id = account_id
        self.webhooks = webhooks
        self.addresses = addresses
        self.row: Callable[..., schemas.Link] = partial(link_row, base)
        self.forget = forget

    async def _run(self, statement: Any, **params: Any) -> list[Any]:
        """A Core statement on the transaction's connection, its rows."""
        connection = await self.session.connection()
        return list(await connection.execute(statement, params))

    async def _owned(self, statement: Any, link_id: str) -> list[Any]:
        """``statement`` on the account's link ``link_id``; 404 when it has no rows."""
        rows = await self._run(statement, link_id=link_id, account_id=self.account_id)
        if not rows:
            raise NotFound(f"Link {link_id} not found")
        return rows

    async def _emit(self, event: str, link: schemas.Link) -> None:
        await self.webhooks.emit(self.session, self.account_id, event, msgspec.to_builtins(link))

    def _forget_after_commit(self, *codes: str) -> None:
        for code in codes:
            after_commit(self.session, partial(self.forget, code))

    def _stored(self, field: str, value: Any) -> Any:
        """A given field's value as it is stored: URLs and codes checked (422, or 400
        for what the schema could not say), text without surrounding whitespace."""
        if value is None:
            return None
        if field in ("destination_url", "expired_url"):
            return web_url(value, field)
        if field == "code":
            return self.addresses.check(value)
        if field == "title":
            return value.strip() or None
        if field == "tags":
            return _tags(value)
        return value

    async def create(self, data: schemas.LinkCreate) -> schemas.Link:
        """409 when the chosen code is taken; a generated one is drawn again."""
        values = {name: self._stored(name, getattr(data, name)) for name in data.__struct_fields__}
        chosen: str | None = values.pop("code")
        now = utcnow()
        values.update(account_id=self.account_id, clicks=0, created_at=now, updated_at=now)
        connection = await self.session.connection()
        insert = _insert_unless_taken(connection.dialect.name)
        for _attempt in range(1 if chosen else CODE_ATTEMPTS):
            code = chosen or self.addresses.generate()
            rows = await self._run(insert, **values, code=code, public_id=_public_id())
            if rows:
                link = self.row(*rows[0])
                # A visit before the link existed may have left the code known as unknown.
                self._forget_after_commit(code)
                await self._emit(LINK_CREATED, link)
                return link
        if chosen:
            raise Conflict(f"code {chosen!r} is already taken")
        raise Conflict("no free code was found; try again")

    async def update(self, link_id: str, data: schemas.LinkUpdate) -> schemas.Link:
        """Only the fields given change; 409 when a new code is taken."""
        changes = {
            name: self._stored(name, value)
            for name in data.__struct_fields__
            if (value := getattr(data, name)) is not msgspec.UNSET
        }
        if not changes:
            return await self.link(link_id)
        [(old_code,)] = await self._owned(CURRENT_CODE, link_id)
        statement = (
            update(LINKS)
            .where(LINKS.c.public_id == link_id, LINKS.c.account_id == self.account_id)
            .values(**changes, updated_at=utcnow())
            .returning(*LINK_COLUMNS)
        )
        try:
            rows = await self._run(statement)
        except IntegrityError:
            # The only unique column a change can clash on; the request rolls back.
            raise Conflict(f"code {changes['code']!r} is already taken") from None
        link = self.row(*rows[0])
        self._forget_after_commit(*dict.fromkeys((old_code, link.code)))
        await self._emit(LINK_UPDATED, link)
        return link

    async def delete(self, link_id: str) -> None:
        """The link and its clicks; its code is free again."""
        [row] = await self._owned(DELETE, link_id)
        link = self.row(*row)
        self._forget_after_commit(link.code)
        await self._emit(LINK_DELETED, link)

    async def link(self, link_id: str) -> schemas.Link:
        [row] = await self._owned(CURRENT, link_id)
        return self.row(*row)
