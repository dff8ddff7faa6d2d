"""HTTP handlers of the chat product (``/v1/chat``).

A keyed handler receives ``chat``, the caller's account in the request's transaction
(:func:`provide_chat`), committed once the handler has made its answer; ids of another
account are answered 404 (or 422 where they are referenced from a body), like unknown
ones. The contact's stream routes are keyless: the stream token names the account.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, get, patch, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, QueryParameter
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession

from tollway import (
    MAX_ROW_ID,
    BadRequest,
    CurrentCaller,
    CurrentGateway,
    FilterId,
    Id,
    ListPage,
    LiveEvent,
    Page,
    Reads,
    live_stream,
    offset,
    page_limit,
)
from tollway_chat import schemas
from tollway_chat.channels import OutboundMessage, contact_topic
from tollway_chat.delivery import Delivery
from tollway_chat.models import Message
from tollway_chat.product import (
    AGENTS_READ,
    AGENTS_WRITE,
    CONTACTS_READ,
    CONTACTS_WRITE,
    CONVERSATIONS_READ,
    CONVERSATIONS_WRITE,
    INBOXES_READ,
    MESSAGES_READ,
    MESSAGES_WRITE,
)
from tollway_chat.queries import ChatReads
from tollway_chat.service import Chat
from tollway_chat.settings import ChatSettings
from tollway_chat.stream import StreamTokens

StreamTokenParam = Annotated[
    str, QueryParameter(min_length=1, max_length=4096, description="The contact's stream token.")
]
REPLAY_LIMIT = 100
"""At most this many missed messages are replayed to a reconnecting stream."""


async def provide_chat(
    transaction: NamedDependency[AsyncSession],
    caller: CurrentCaller,
    gateway: CurrentGateway,
    delivery: NamedDependency[Delivery],
) -> Chat:
    """The caller's account in the request's transaction (the ``chat`` dependency);
    outgoing messages it adds are looked for as soon as the transaction commits."""
    return Chat(
        transaction,
        caller.principal.account_id,
        gateway.webhooks,
        deliver=delivery.after_commit,
    )


def provide_chat_reads(reads: NamedDependency[Reads], caller: CurrentCaller) -> ChatReads:
    """The caller's account for reading (the ``chat_reads`` dependency): no transaction."""
    return ChatReads(reads, caller.principal.account_id)


def _text(value: str, field: str) -> str:
    """``value``, if the database can store it (PostgreSQL text cannot hold NUL)."""
    if "\x00" in value:
        raise BadRequest(f"Invalid request: {field} must not contain NUL characters")
    return value


def _name(value: str) -> str:
    name = _text(value, "name").strip()
    if not name:
        raise BadRequest("Invalid request body: name must not be blank")
    return name


# Conversations ----------------------------------------------------------------------


@get("/conversations", scope=CONVERSATIONS_READ)
async def list_conversations(
    chat_reads: NamedDependency[ChatReads],
    status: Annotated[schemas.ConversationStatus | None, QueryParameter()] = None,
    inbox_id: FilterId = None,
    agent_id: FilterId = None,
    page: Page = 1,
    limit: Annotated[int, page_limit(50)] = 25,
) -> ListPage[schemas.Conversation]:
    """Most recent activity first."""
    data, total = await chat_reads.list_conversations(
        status=status,
        inbox_id=inbox_id,
        agent_id=agent_id,
        offset=offset(page, limit),
        limit=limit,
    )
    return ListPage(data=data, total=total, page=page, limit=limit)


@post("/conversations", scope=CONVERSATIONS_WRITE)
async def create_conversation(
    data: JSONBody[schemas.ConversationCreate], chat: NamedDependency[Chat]
) -> schemas.Conversation:
    if data.message is not None:
        _text(data.message.content, "message.content")
    return await chat.create_conversation(data)


@get("/conversations/{conversation_id:int}", scope=CONVERSATIONS_READ)
async def get_conversation(
    conversation_id: Id, chat_reads: NamedDependency[ChatReads]
) -> schemas.Conversation:
    return await chat_reads.conversation(conversation_id)


@patch("/conversations/{conversation_id:int}", scope=CONVERSATIONS_WRITE)
async def update_conversation(
    conversation_id: Id, data: JSONBody[schemas.ConversationUpdate], chat: NamedDependency[Chat]
) -> schemas.Conversation:
    return await chat.update_conversation(conversation_id, data)


# Messages ---------------------------------------------------------------------------


@get("/conversations/{conversation_id:int}/messages", scope=MESSAGES_READ)
async def list_messages(
    conversation_id: Id,
    chat_reads: NamedDependency[ChatReads],
    page: Page = 1,
    limit: Annotated[int, page_limit(100)] = 50,
) -> schemas.MessageList:
    """Oldest first."""
    data, total = await chat_reads.list_messages(
        conversation_id, offset=offset(page, limit), limit=limit
    )
    return schemas.MessageList(data=data, total=total)


@post("/conversations/{conversation_id:int}/messages", scope=MESSAGES_WRITE)
async def send_message(
    conversation_id: Id, data: JSONBody[schemas.MessageCreate], chat: NamedDependency[Chat]
) -> schemas.Message:
    _text(data.content, "content")
    return await chat.send_message(conversation_id, data)


# Contacts ---------------------------------------------------------------------------


@get("/contacts", scope=CONTACTS_READ)
async def list_contacts(
    chat_reads: NamedDependency[ChatReads],
    q: Annotated[str, QueryParameter(max_length=200)] = "",
    page: Page = 1,
    limit: Annotated[int, page_limit(100)] = 25,
) -> schemas.ContactList:
    """Oldest first; ``q`` matches a substring of name, email or phone, ignoring case."""
    _text(q, "q")
    data, total = await chat_reads.list_contacts(q, offset=offset(page, limit), limit=limit)
    return schemas.ContactList(data=data, total=total)


@post("/contacts", scope=CONTACTS_WRITE)
async def create_contact(
    data: JSONBody[schemas.ContactCreate], chat: NamedDependency[Chat]
) -> schemas.Contact:
    data.name = _name(data.name)
    if data.email is not None:
        _text(data.email, "email")
    return await chat.create_contact(data)


@get("/contacts/{contact_id:int}", scope=CONTACTS_READ)
async def get_contact(contact_id: Id, chat_reads: NamedDependency[ChatReads]) -> schemas.Contact:
    return await chat_reads.contact(contact_id)


@post("/contacts/{contact_id:int}/stream-token", scope=CONTACTS_WRITE)
async def create_stream_token(
    contact_id: Id,
    chat_reads: NamedDependency[ChatReads],
    stream_tokens: NamedDependency[StreamTokens],
) -> schemas.StreamToken:
    """A short-lived token with which the contact reads ``GET /v1/chat/stream``."""
    await chat_reads.contact(contact_id)
    token, expires_at = await stream_tokens.issue(chat_reads.account_id, contact_id)
    return schemas.StreamToken(token=token, contact_id=contact_id, expires_at=expires_at)


def _event(message: OutboundMessage | Message) -> LiveEvent:
    if isinstance(message, Message):
        agent_name = message.agent.name if message.agent else None
        created_at = message.created_at.isoformat()
    else:
        agent_name, created_at = message.agent_name, message.created_at
    data = {
        "id": message.id,
        "conversation_id": message.conversation_id,
        "content": message.content,
        "sender": {"type": "agent", "name": agent_name},
        "created_at": created_at,
    }
    return LiveEvent(msgspec.json.encode(data), event="message", id=str(message.id))


def _is_message(event: LiveEvent) -> bool:
    return event.event == "message"


def _last_event_id(request: Request[Any, Any, Any], after: int | None) -> int:
    """Where a reconnecting stream resumes: ``after``, else the ``Last-Event-ID`` header
    that EventSource sends by itself (a message id; anything else means from now)."""
    if after is not None:
        return after
    header = request.headers.get("last-event-id", "")
    if not (header.isascii() and header.isdigit()) or len(header) > 18:
        return 0
    return min(int(header), MAX_ROW_ID)  # past the last possible id: nothing to replay


@get("/stream", public=True, media_type="text/event-stream")
async def contact_stream(
    request: Request[Any, Any, Any],
    gateway: CurrentGateway,
    stream_tokens: NamedDependency[StreamTokens],
    token: StreamTokenParam,
    max_seconds: Annotated[
        int, QueryParameter(ge=1, le=3600, description="End the stream after this long.")
    ] = 300,
    once: Annotated[bool, QueryParameter(description="End after the first message.")] = False,
    after: Annotated[
        int | None,
        QueryParameter(
            ge=0, le=MAX_ROW_ID, description="Replay messages after this id (as Last-Event-ID)."
        ),
    ] = None,
) -> Stream:
    """The contact's live_chat messages as Server-Sent Events (no API key: ``token``)."""
    account_id, contact_id = await stream_tokens.verify(token)
    resume = _last_event_id(request, after)
    replayed: set[int] = set()

    async def opening() -> list[LiveEvent]:
        ready = LiveEvent(msgspec.json.encode({"contact_id": contact_id}), event="ready")
        if not resume:
            return [ready]
        # A session of its own, closed before the stream starts: an open stream holds
        # no database connection, however long it waits for messages.
        async with gateway.database.transaction() as session:
            chat = Chat(session, account_id, gateway.webhooks)
            backlog = await chat.stream_backlog(contact_id, resume, REPLAY_LIMIT)
        replayed.update(message.id for message in backlog)
        return [ready, *map(_event, backlog)]

    def sent(payload: bytes) -> LiveEvent | None:
        message = msgspec.json.decode(payload, type=OutboundMessage)
        if message.id <= resume or message.id in replayed:
            return None  # a retried send of a message the client has already
        return _event(message)

    return await live_stream(
        gateway.live,
        contact_topic(account_id, contact_id),
        sent,
        first=opening,
        max_seconds=min(max_seconds, gateway.product_settings(ChatSettings).stream_max_seconds),
        end_after=_is_message if once else None,
    )


@post("/stream/messages", public=True)
async def contact_writes(
    data: JSONBody[schemas.ContactMessageCreate],
    gateway: CurrentGateway,
    transaction: NamedDependency[AsyncSession],
    stream_tokens: NamedDependency[StreamTokens],
    token: StreamTokenParam,
) -> schemas.Message:
    """A message from the live_chat contact, authenticated like the stream by ``token``
    (no API key). It arrives as an incoming message."""
    account_id, contact_id = await stream_tokens.verify(token)
    content = _text(data.content, "content")
    chat = Chat(transaction, account_id, gateway.webhooks)
    return await chat.contact_writes(contact_id, content, data.conversation_id)


# Agents and inboxes -------------------------------------------------------------------


@get("/agents", scope=AGENTS_READ)
async def list_agents(chat_reads: NamedDependency[ChatReads]) -> schemas.AgentList:
    agents = await chat_reads.list_agents()
    return schemas.AgentList(data=agents, total=len(agents))


@post("/agents", scope=AGENTS_WRITE)
async def create_agent(
    data: JSONBody[schemas.AgentCreate], chat: NamedDependency[Chat]
) -> schemas.Agent:
    data.name = _name(data.name)
    _text(data.email, "email")
    return await chat.create_agent(data)


@get("/inboxes", scope=INBOXES_READ)
async def list_inboxes(chat_reads: NamedDependency[ChatReads]) -> schemas.InboxList:
    """Inboxes are created by operators (``tollway chat inboxes create``)."""
    return schemas.InboxList(data=await chat_reads.list_inboxes())


ROUTES = [
    list_conversations,
    create_conversation,
    get_conversation,
    update_conversation,
    list_messages,
    send_message,
    list_contacts,
    create_contact,
    get_contact,
    create_stream_token,
    contact_stream,
    contact_writes,
    list_agents,
    create_agent,
    list_inboxes,
]
