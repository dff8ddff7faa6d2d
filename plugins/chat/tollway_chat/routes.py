"""HTTP handlers of the chat product (``/v1/chat``).

Each handler runs one transaction on the caller's account through
``tollway_chat.service.Chat``; ids of another account are answered 404 (or 422 where
they are referenced from a body), like unknown ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import msgspec
from litestar import Request, get, patch, post
from litestar.params import JSONBody, PathParameter, QueryParameter
from litestar.response import ServerSentEvent, ServerSentEventMessage

from tollway import BadRequest, Caller, CurrentCaller, CurrentGateway, Gateway
from tollway_chat import schemas, stream
from tollway_chat.channels import OutboundMessage
from tollway_chat.delivery import delivery_for
from tollway_chat.models import Message
from tollway_chat.service import Chat, conversation_view

SCOPES = {
    "chat:conversations:read": "List and read chat conversations",
    "chat:conversations:write": "Start chat conversations, change their status and agent",
    "chat:messages:read": "Read the messages of chat conversations",
    "chat:messages:write": "Send messages and private notes in chat conversations",
    "chat:contacts:read": "List, search and read chat contacts",
    "chat:contacts:write": "Create chat contacts",
    "chat:agents:read": "List chat agents",
    "chat:agents:write": "Create chat agents",
    "chat:inboxes:read": "List chat inboxes",
}

Page = Annotated[int, QueryParameter(ge=1, le=100_000, description="1-based page number.")]
MAX_ROW_ID = 2**31 - 1
Id = Annotated[int, PathParameter(ge=1, le=MAX_ROW_ID)]
"""A row id: what the database's integer primary keys can hold."""
StreamTokenParam = Annotated[
    str, QueryParameter(min_length=1, max_length=4096, description="The contact's stream token.")
]
REPLAY_LIMIT = 100
"""At most this many missed messages are replayed to a reconnecting stream."""
FilterId = Annotated[int | None, QueryParameter(ge=1, le=2**31 - 1)]


@asynccontextmanager
async def _chat(gateway: Gateway, caller: Caller) -> AsyncIterator[Chat]:
    async with gateway.database.transaction() as session:
        yield Chat(
            session,
            caller.principal.account_id,
            gateway.webhooks,
            deliver=delivery_for(gateway).after_commit,
        )


def _refuse_null(request: Request[Any, Any, Any], *names: str) -> None:
    """Litestar reads ``?name=null`` as an absent optional parameter; it is not a value
    of these parameters, so it is refused rather than ignored."""
    for name in names:
        if "null" in request.query_params.getall(name, []):
            raise BadRequest(f"Invalid request: {name}: null is not a valid value")


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


@get("/conversations", scope="chat:conversations:read")
async def list_conversations(
    request: Request[Any, Any, Any],
    caller: CurrentCaller,
    gateway: CurrentGateway,
    status: Annotated[schemas.ConversationStatus | None, QueryParameter()] = None,
    inbox_id: FilterId = None,
    agent_id: FilterId = None,
    page: Page = 1,
    limit: Annotated[int, QueryParameter(ge=1, le=50, description="1-50.")] = 25,
) -> schemas.ConversationList:
    """Most recent activity first."""
    _refuse_null(request, "status", "inbox_id", "agent_id")
    async with _chat(gateway, caller) as chat:
        data, total = await chat.list_conversations(
            status=status,
            inbox_id=inbox_id,
            agent_id=agent_id,
            offset=(page - 1) * limit,
            limit=limit,
        )
    return schemas.ConversationList(data=data, total=total, page=page, limit=limit)


@post("/conversations", scope="chat:conversations:write")
async def create_conversation(
    data: JSONBody[schemas.ConversationCreate], caller: CurrentCaller, gateway: CurrentGateway
) -> schemas.Conversation:
    if data.message is not None:
        _text(data.message.content, "message.content")
    async with _chat(gateway, caller) as chat:
        return await chat.create_conversation(data)


@get("/conversations/{conversation_id:int}", scope="chat:conversations:read")
async def get_conversation(
    conversation_id: Id, caller: CurrentCaller, gateway: CurrentGateway
) -> schemas.Conversation:
    async with _chat(gateway, caller) as chat:
        return conversation_view(await chat.conversation(conversation_id))


@patch("/conversations/{conversation_id:int}", scope="chat:conversations:write")
async def update_conversation(
    conversation_id: Id,
    data: JSONBody[schemas.ConversationUpdate],
    caller: CurrentCaller,
    gateway: CurrentGateway,
) -> schemas.Conversation:
    async with _chat(gateway, caller) as chat:
        return await chat.update_conversation(conversation_id, data)


# Messages ---------------------------------------------------------------------------


@get("/conversations/{conversation_id:int}/messages", scope="chat:messages:read")
async def list_messages(
    conversation_id: Id,
    caller: CurrentCaller,
    gateway: CurrentGateway,
    page: Page = 1,
    limit: Annotated[int, QueryParameter(ge=1, le=100, description="1-100.")] = 50,
) -> schemas.MessageList:
    """Oldest first."""
    async with _chat(gateway, caller) as chat:
        data, total = await chat.list_messages(
            conversation_id, offset=(page - 1) * limit, limit=limit
        )
    return schemas.MessageList(data=data, total=total)


@post("/conversations/{conversation_id:int}/messages", scope="chat:messages:write")
async def send_message(
    conversation_id: Id,
    data: JSONBody[schemas.MessageCreate],
    caller: CurrentCaller,
    gateway: CurrentGateway,
) -> schemas.Message:
    _text(data.content, "content")
    async with _chat(gateway, caller) as chat:
        return await chat.send_message(conversation_id, data)


# Contacts ---------------------------------------------------------------------------


@get("/contacts", scope="chat:contacts:read")
async def list_contacts(
    caller: CurrentCaller,
    gateway: CurrentGateway,
    q: Annotated[str, QueryParameter(max_length=200)] = "",
    page: Page = 1,
    limit: Annotated[int, QueryParameter(ge=1, le=100, description="1-100.")] = 25,
) -> schemas.ContactList:
    """Oldest first; ``q`` matches a substring of name, email or phone, ignoring case."""
    _text(q, "q")
    async with _chat(gateway, caller) as chat:
        data, total = await chat.list_contacts(q, offset=(page - 1) * limit, limit=limit)
    return schemas.ContactList(data=data, total=total)


@post("/contacts", scope="chat:contacts:write")
async def create_contact(
    data: JSONBody[schemas.ContactCreate], caller: CurrentCaller, gateway: CurrentGateway
) -> schemas.Contact:
    data.name = _name(data.name)
    if data.email is not None:
        _text(data.email, "email")
    async with _chat(gateway, caller) as chat:
        return await chat.create_contact(data)


@get("/contacts/{contact_id:int}", scope="chat:contacts:read")
async def get_contact(
    contact_id: Id, caller: CurrentCaller, gateway: CurrentGateway
) -> schemas.Contact:
    async with _chat(gateway, caller) as chat:
        return await chat.contact(contact_id)


@post("/contacts/{contact_id:int}/stream-token", scope="chat:contacts:write")
async def create_stream_token(
    contact_id: Id, caller: CurrentCaller, gateway: CurrentGateway
) -> schemas.StreamToken:
    """A short-lived token with which the contact reads ``GET /v1/chat/stream``."""
    account_id = caller.principal.account_id
    async with _chat(gateway, caller) as chat:
        await chat.contact(contact_id)
    token, expires_at = await stream.issue(gateway, account_id, contact_id)
    return schemas.StreamToken(token=token, contact_id=contact_id, expires_at=expires_at)


def _event(message: OutboundMessage | Message) -> ServerSentEventMessage:
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
    return ServerSentEventMessage(
        event="message", id=str(message.id), data=msgspec.json.encode(data).decode()
    )


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
) -> ServerSentEvent:
    """The contact's live_chat messages as Server-Sent Events (no API key: ``token``)."""
    _refuse_null(request, "after")
    account_id, contact_id = await stream.verify(gateway, token)
    resume = _last_event_id(request, after)
    cap = int(gateway.settings.product("chat").settings.get("stream_max_seconds", 3600))
    lifetime = min(max_seconds, cap)
    bus = delivery_for(gateway).bus
    queue = await bus.subscribe(account_id, contact_id)
    try:
        backlog: list[Message] = []
        if resume:
            async with gateway.database.transaction() as session:
                chat = Chat(session, account_id, gateway.webhooks)
                backlog = await chat.stream_backlog(contact_id, resume, REPLAY_LIMIT)
    except BaseException:
        await bus.unsubscribe(account_id, contact_id, queue)
        raise

    async def events() -> AsyncIterator[ServerSentEventMessage]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + lifetime
        try:
            yield ServerSentEventMessage(
                event="ready", data=msgspec.json.encode({"contact_id": contact_id}).decode()
            )
            replayed = {message.id for message in backlog}
            for message in backlog:
                yield _event(message)
                if once:
                    return
            while (remaining := deadline - loop.time()) > 0:
                try:
                    live = await asyncio.wait_for(queue.get(), min(remaining, 15.0))
                except TimeoutError:
                    if deadline - loop.time() > 0:
                        yield ServerSentEventMessage(comment="keep-alive")
                    continue
                if live.id <= resume or live.id in replayed:
                    continue  # a retried send of a message the client has already
                yield _event(live)
                if once:
                    return
        finally:
            await bus.unsubscribe(account_id, contact_id, queue)

    return ServerSentEvent(events())


@post("/stream/messages", public=True)
async def contact_writes(
    data: JSONBody[schemas.ContactMessageCreate], gateway: CurrentGateway, token: StreamTokenParam
) -> schemas.Message:
    """A message from the live_chat contact, authenticated like the stream by ``token``
    (no API key). It arrives as an incoming message."""
    account_id, contact_id = await stream.verify(gateway, token)
    content = _text(data.content, "content")
    async with gateway.database.transaction() as session:
        chat = Chat(session, account_id, gateway.webhooks)
        return await chat.contact_writes(contact_id, content, data.conversation_id)


# Agents and inboxes -------------------------------------------------------------------


@get("/agents", scope="chat:agents:read")
async def list_agents(caller: CurrentCaller, gateway: CurrentGateway) -> schemas.AgentList:
    async with _chat(gateway, caller) as chat:
        agents = await chat.list_agents()
    return schemas.AgentList(data=agents, total=len(agents))


@post("/agents", scope="chat:agents:write")
async def create_agent(
    data: JSONBody[schemas.AgentCreate], caller: CurrentCaller, gateway: CurrentGateway
) -> schemas.Agent:
    data.name = _name(data.name)
    _text(data.email, "email")
    async with _chat(gateway, caller) as chat:
        return await chat.create_agent(data)


@get("/inboxes", scope="chat:inboxes:read")
async def list_inboxes(caller: CurrentCaller, gateway: CurrentGateway) -> schemas.InboxList:
    """Inboxes are created by operators (``tollway chat inboxes create``)."""
    async with _chat(gateway, caller) as chat:
        return schemas.InboxList(data=await chat.list_inboxes())


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
