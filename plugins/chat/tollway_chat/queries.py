"""The chat product's reads: one statement each, rows straight into the wire's Structs.

A ``GET`` needs no transaction and no ORM objects. Each method here selects exactly
the columns its answer shows, joined in the same statement, and builds the
:mod:`tollway_chat.schemas` Struct from the row (:class:`tollway.db.Reads`). Every
query is filtered by the account, so another account's id is simply not found.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import BindParameter, ColumnElement, bindparam, func, or_, select

from tollway import (
    PAGE_LIMIT,
    PAGE_OFFSET,
    AnySelect,
    NotFound,
    Paged,
    Reads,
    columns_of,
    count_of,
    escape_like,
)
from tollway_chat import schemas
from tollway_chat.models import (
    CONVERSATION_TALLY,
    Agent,
    Contact,
    Conversation,
    Inbox,
    Message,
)

# Rows into Structs --------------------------------------------------------------------

CONVERSATION_COLUMNS = (
    Conversation.id,
    Conversation.status,
    Conversation.inbox_id,
    Contact.id,
    Contact.name,
    Contact.email,
    Agent.id,
    Agent.name,
    Conversation.unread_count,
    Conversation.last_activity_at,
    Conversation.created_at,
    Conversation.updated_at,
)


def conversation_row(
    id: int,
    status: str,
    inbox_id: int,
    contact_id: int,
    contact_name: str,
    contact_email: str | None,
    agent_id: int | None,
    agent_name: str | None,
    unread_count: int,
    last_activity_at: datetime,
    created_at: datetime,
    updated_at: datetime,
) -> schemas.Conversation:
    return schemas.Conversation(
        id,
        status,
        inbox_id,
        schemas.ContactRef(contact_id, contact_name, contact_email),
        None if agent_id is None else schemas.AgentRef(agent_id, agent_name or ""),
        unread_count,
        last_activity_at,
        created_at,
        updated_at,
    )


def _conversations() -> AnySelect:
    return (
        select(*CONVERSATION_COLUMNS)
        .join(Contact, Contact.id == Conversation.contact_id)
        .outerjoin(Agent, Agent.id == Conversation.agent_id)
    )


MESSAGE_COLUMNS = (
    Message.id,
    Message.conversation_id,
    Message.type,
    Message.content,
    Message.private,
    Agent.id,
    Agent.name,
    Contact.id,
    Contact.name,
    Message.created_at,
)


def message_row(
    id: int,
    conversation_id: int,
    type: str,
    content: str,
    private: bool,
    agent_id: int | None,
    agent_name: str | None,
    contact_id: int | None,
    contact_name: str | None,
    created_at: datetime,
) -> schemas.Message:
    sender: schemas.Sender | None = None
    if agent_id is not None:
        sender = schemas.Sender("agent", agent_id, agent_name or "")
    elif contact_id is not None:
        sender = schemas.Sender("contact", contact_id, contact_name or "")
    return schemas.Message(
        id,
        conversation_id,
        "incoming" if type == "incoming" else "outgoing",
        content,
        private,
        sender,
        created_at,
    )


def _conversation_count() -> Any:
    return (
        select(func.count(Conversation.id))
        .where(Conversation.contact_id == Contact.id)
        .correlate(Contact)
        .scalar_subquery()
    )


def _contacts() -> AnySelect:
    return select(
        Contact.id,
        Contact.name,
        Contact.email,
        Contact.phone,
        _conversation_count(),
        Contact.created_at,
    )


ACCOUNT: BindParameter[int] = bindparam("account_id")


def _on_page(
    shown: AnySelect, id_column: Any, conditions: Sequence[Any], order: Sequence[Any]
) -> AnySelect:
    """``shown`` (the columns an answer shows, with their joins) for the rows of one
    page. The page's ids are chosen on the table alone, ordered, offset and limited, which
    an index serves; only those rows are joined and computed. Joined before the offset,
    a deep page (``page=200``) joins and discards every row in front of it."""
    page = (
        select(id_column).where(*conditions).order_by(*order).offset(PAGE_OFFSET).limit(PAGE_LIMIT)
    ).subquery()
    return shown.join(page, page.c[0] == id_column).order_by(*order)


@cache
def _conversation_page(status: bool, inbox: bool, agent: bool) -> Paged:
    """The conversation list, with a condition for each filter given; its total is
    the sum of the matching conversation counts (:data:`CONVERSATION_TALLY`)."""
    filters: dict[str, BindParameter[Any]] = {"account_id": ACCOUNT}
    for name, given in (("status", status), ("inbox_id", inbox), ("agent_id", agent)):
        if given:
            filters[name] = bindparam(name)
    conditions = [getattr(Conversation, name) == value for name, value in filters.items()]
    order = (Conversation.last_activity_at.desc(), Conversation.id.desc())
    return Paged(
        _on_page(_conversations(), Conversation.id, conditions, order),
        CONVERSATION_TALLY.total(**filters),
    )


CONVERSATION = _conversations().where(
    Conversation.id == bindparam("id"), Conversation.account_id == ACCOUNT
)
_MESSAGE_CONDITIONS = (
    Message.conversation_id == bindparam("conversation_id"),
    Message.account_id == ACCOUNT,
)
MESSAGE_PAGE = Paged(
    _on_page(
        select(*MESSAGE_COLUMNS)
        .outerjoin(Agent, Agent.id == Message.agent_id)
        .outerjoin(Contact, Contact.id == Message.contact_id),
        Message.id,
        _MESSAGE_CONDITIONS,
        (Message.id,),
    ),
    count_of(Message, *_MESSAGE_CONDITIONS),
)


@cache
def _contact_page(search: bool) -> Paged:
    """The contact list; ``search``: ``q`` (a ``LIKE`` pattern) matches a substring of
    name, email or phone, ignoring case."""
    conditions: list[ColumnElement[bool]] = [Contact.account_id == ACCOUNT]
    if search:
        pattern: BindParameter[str] = bindparam("pattern")
        conditions.append(
            or_(
                *(
                    column.ilike(pattern, escape="\\")
                    for column in (Contact.name, Contact.email, Contact.phone)
                )
            )
        )
    return Paged(
        _on_page(_contacts(), Contact.id, conditions, (Contact.id,)),
        count_of(Contact, *conditions),
    )


CONTACT = _contacts().where(Contact.id == bindparam("id"), Contact.account_id == ACCOUNT)
AGENTS = (
    select(*columns_of(Agent, schemas.Agent)).where(Agent.account_id == ACCOUNT).order_by(Agent.id)
)
INBOXES = (
    select(*columns_of(Inbox, schemas.Inbox)).where(Inbox.account_id == ACCOUNT).order_by(Inbox.id)
)


class ChatReads:
    """One account's chat data, read without a transaction."""

    def __init__(self, reads: Reads, account_id: int) -> None:
        self.reads = reads
        self.account_id = account_id

    async def conversation(self, conversation_id: int) -> schemas.Conversation:
        found = await self.reads.first(
            CONVERSATION, conversation_row, id=conversation_id, account_id=self.account_id
        )
        if found is None:
            raise NotFound(f"Conversation {conversation_id} not found")
        return found

    async def list_conversations(
        self,
        *,
        status: str | None,
        inbox_id: int | None,
        agent_id: int | None,
        offset: int,
        limit: int,
    ) -> tuple[list[schemas.Conversation], int]:
        query = _conversation_page(status is not None, inbox_id is not None, agent_id is not None)
        return await self.reads.page(
            query,
            conversation_row,
            account_id=self.account_id,
            status=status,
            inbox_id=inbox_id,
            agent_id=agent_id,
            offset=offset,
            limit=limit,
        )

    async def list_messages(
        self, conversation_id: int, *, offset: int, limit: int
    ) -> tuple[list[schemas.Message], int]:
        """Oldest first; 404 when the conversation is not the account's. A page that
        has rows proves the conversation is the account's without a second query."""
        data, total = await self.reads.page(
            MESSAGE_PAGE,
            message_row,
            conversation_id=conversation_id,
            account_id=self.account_id,
            offset=offset,
            limit=limit,
        )
        if not data:
            await self.conversation(conversation_id)
        return data, total

    async def list_contacts(
        self, q: str, *, offset: int, limit: int
    ) -> tuple[list[schemas.Contact], int]:
        """Oldest first; ``q`` matches a substring of name, email or phone, ignoring case."""
        return await self.reads.page(
            _contact_page(bool(q)),
            schemas.Contact,
            account_id=self.account_id,
            pattern=f"%{escape_like(q)}%",
            offset=offset,
            limit=limit,
        )

    async def contact(self, contact_id: int) -> schemas.Contact:
        found = await self.reads.first(
            CONTACT, schemas.Contact, id=contact_id, account_id=self.account_id
        )
        if found is None:
            raise NotFound(f"Contact {contact_id} not found")
        return found

    async def list_agents(self) -> list[schemas.Agent]:
        return await self.reads.all(AGENTS, schemas.Agent, account_id=self.account_id)

    async def list_inboxes(self) -> list[schemas.Inbox]:
        return await self.reads.all(INBOXES, schemas.Inbox, account_id=self.account_id)
