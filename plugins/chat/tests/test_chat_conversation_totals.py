"""The conversation list's ``total`` is exact for every combination of its filters,
whatever wrote the conversations: the API, an incoming message reopening one, or the
database's own foreign keys when an agent, inbox or contact row is deleted (the API
deletes nothing; an operator or an account's deletion does). The totals come from
counts kept by triggers (migration 0005), checked here against ``count(*)``.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, get_args

import pytest
from chat_client import CHAT, ChatClient, inbox, open_chat
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, func, insert, select, update

import tollway_chat
from tollway import utcnow
from tollway.testing import ProductClientFactory, Tenant, revision, run_revision
from tollway_chat.models import Agent, Contact, Conversation, Inbox
from tollway_chat.product import SCOPES
from tollway_chat.schemas import ConversationStatus

STATUSES: tuple[str, ...] = get_args(ConversationStatus)
INBOXES, CONTACTS, AGENTS = 3, 2, 2


@pytest.fixture
async def chat(product_client: ProductClientFactory) -> AsyncIterator[ChatClient]:
    """One app for every example of a test; each example has an account of its own.
    The app's lifespan runs in a task of its own: pytest runs a fixture's setup and
    teardown in different tasks, and a lifespan must end in the task it began in."""
    opened: asyncio.Future[ChatClient] = asyncio.get_running_loop().create_future()
    done = asyncio.Event()

    async def serve() -> None:
        # Outgoing messages to contacts without a stream fail; no retry during the test.
        async with open_chat(product_client, settings={"delivery_retry_schedule": [60]}) as client:
            opened.set_result(client)
            await done.wait()

    serving = asyncio.create_task(serve())
    either: list[asyncio.Future[Any]] = [opened, serving]
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    if not opened.done():
        await serving  # failed before the app was up: raises why
    try:
        yield opened.result()
    finally:
        done.set()
        await serving


@dataclass
class Account:
    """One example's account: its inboxes (live_chat), contacts with their stream
    tokens, and agents; the ids of those deleted stay listed, in ``gone``."""

    chat: ChatClient
    tenant: Tenant
    inboxes: list[int] = field(default_factory=list)
    contacts: list[int] = field(default_factory=list)
    tokens: dict[int, str] = field(default_factory=dict)
    agents: list[int] = field(default_factory=list)
    gone: set[tuple[type[Any], int]] = field(default_factory=set)
    """The model and id of each row deleted."""

    def alive(self, model: type[Any], row_id: int | None) -> bool:
        return row_id is not None and (model, row_id) not in self.gone

    async def call(self, method: str, path: str, *, expect: int = 200, **request: Any) -> Any:
        client = self.chat.product_client
        return await client.call(method, path, expect=expect, by=self.tenant, **request)

    async def delete(self, model: type[Any], row_id: int) -> None:
        """A row the API cannot delete, deleted in the database: its foreign keys act."""
        if self.alive(model, row_id):
            async with self.chat.gateway.database.transaction() as session:
                await session.execute(delete(model).where(model.id == row_id))
            self.gone.add((model, row_id))

    async def conversation(self, pick: int) -> tuple[int, int] | None:
        """The id and contact of the account's ``pick``-th conversation (modulo)."""
        async with self.chat.gateway.database.engine.connect() as connection:
            rows = (
                await connection.execute(
                    select(Conversation.id, Conversation.contact_id)
                    .where(Conversation.account_id == self.tenant.account_id)
                    .order_by(Conversation.id)
                )
            ).all()
        return (rows[pick % len(rows)][0], rows[pick % len(rows)][1]) if rows else None


async def _account(chat: ChatClient) -> Account:
    tenant = await chat.tenant(f"totals-{secrets.token_hex(4)}", scopes=SCOPES)
    owner = Account(chat, tenant)
    for number in range(INBOXES):
        owner.inboxes.append(await inbox(chat.gateway, tenant, f"Inbox {number}"))
    for number in range(CONTACTS):
        body = {"name": f"Contact {number}", "email": f"c{number}@example.com"}
        contact = (await owner.call("POST", "/contacts", json=body, expect=201))["id"]
        token = await owner.call("POST", f"/contacts/{contact}/stream-token", json={}, expect=201)
        owner.contacts.append(contact)
        owner.tokens[contact] = token["token"]
    for number in range(AGENTS):
        body = {"name": f"Agent {number}", "email": f"a{number}@support.example"}
        owner.agents.append((await owner.call("POST", "/agents", json=body, expect=201))["id"])
    return owner


# Operations: each a tuple drawn below, applied by the function of the same name.

agent_pick = st.none() | st.integers(0, AGENTS - 1)
creation = st.tuples(
    st.just("create"),
    st.integers(0, INBOXES - 1),
    st.integers(0, CONTACTS - 1),
    agent_pick,
    st.sampled_from(["open", "pending"]),
)
conversation = st.integers(0, 50)
"""Which of the account's conversations (modulo how many there are)."""
change = st.one_of(
    creation,
    st.tuples(st.just("set_status"), conversation, st.sampled_from(STATUSES)),
    st.tuples(st.just("assign"), conversation, agent_pick),
    st.tuples(st.just("contact_writes"), conversation),
    st.tuples(st.just("agent_writes"), conversation),
    st.one_of(  # rarer: each deletes several conversations' groups at once
        st.tuples(st.just("delete_agent"), st.integers(0, AGENTS - 1)),
        st.tuples(st.just("delete_inbox"), st.integers(0, INBOXES - 1)),
        st.tuples(st.just("delete_contact"), st.integers(0, CONTACTS - 1)),
    ),
)
operations = st.tuples(
    st.lists(creation, min_size=2, max_size=6), st.lists(change, max_size=12)
).map(lambda parts: parts[0] + parts[1])


async def create(owner: Account, box: int, contact: int, agent: int | None, status: str) -> None:
    inbox_id, contact_id = owner.inboxes[box], owner.contacts[contact]
    if owner.alive(Inbox, inbox_id) and owner.alive(Contact, contact_id):
        body: dict[str, Any] = {"inbox_id": inbox_id, "contact_id": contact_id, "status": status}
        if agent is not None and owner.alive(Agent, owner.agents[agent]):
            body["agent_id"] = owner.agents[agent]
        await owner.call("POST", "/conversations", json=body, expect=201)


async def set_status(owner: Account, pick: int, status: str) -> None:
    if found := await owner.conversation(pick):
        await owner.call("PATCH", f"/conversations/{found[0]}", json={"status": status})


async def assign(owner: Account, pick: int, agent: int | None) -> None:
    agent_id = None if agent is None else owner.agents[agent]
    if (found := await owner.conversation(pick)) and (
        agent_id is None or owner.alive(Agent, agent_id)
    ):
        await owner.call("PATCH", f"/conversations/{found[0]}", json={"agent_id": agent_id})


async def contact_writes(owner: Account, pick: int) -> None:
    """An incoming message, which opens a resolved conversation again."""
    if found := await owner.conversation(pick):
        conversation_id, contact_id = found
        response = await owner.chat.client.post(
            f"{CHAT}/stream/messages",
            json={"content": "Hello?", "conversation_id": conversation_id},
            params={"token": owner.tokens[contact_id]},
        )
        assert response.status_code == 201, response.text


async def agent_writes(owner: Account, pick: int) -> None:
    """An outgoing message: the conversation's activity changes, not its group."""
    senders = [agent for agent in owner.agents if owner.alive(Agent, agent)]
    if (found := await owner.conversation(pick)) and senders:
        body = {"content": "On it", "agent_id": senders[0]}
        await owner.call("POST", f"/conversations/{found[0]}/messages", json=body, expect=201)


async def delete_agent(owner: Account, number: int) -> None:
    """Its conversations become unassigned (``ON DELETE SET NULL``)."""
    await owner.delete(Agent, owner.agents[number])


async def delete_inbox(owner: Account, number: int) -> None:
    """Its conversations go with it (``ON DELETE CASCADE``)."""
    await owner.delete(Inbox, owner.inboxes[number])


async def delete_contact(owner: Account, number: int) -> None:
    """Its conversations go with it (``ON DELETE CASCADE``)."""
    await owner.delete(Contact, owner.contacts[number])


APPLY = {
    operation.__name__: operation
    for operation in (
        create,
        set_status,
        assign,
        contact_writes,
        agent_writes,
        delete_agent,
        delete_inbox,
        delete_contact,
    )
}


def _filters(owner: Account) -> list[dict[str, Any]]:
    """Every combination of the list's filters over the account's inboxes and agents,
    deleted ones included (their totals are 0)."""
    return [
        {
            name: value
            for name, value in (("status", status), ("inbox_id", box), ("agent_id", agent))
            if value is not None
        }
        for status in (*STATUSES, None)
        for box in (*owner.inboxes, None)
        for agent in (*owner.agents, None)
    ]


async def _assert_totals(chat: ChatClient, owner: Tenant, filters: list[dict[str, Any]]) -> None:
    """The list's total for each of ``filters`` is the ``count(*)`` of its rows."""
    async with chat.gateway.database.engine.connect() as connection:
        for each in filters:
            conditions = [Conversation.account_id == owner.account_id]
            conditions += [getattr(Conversation, name) == value for name, value in each.items()]
            counted = await connection.scalar(
                select(func.count()).select_from(Conversation).where(*conditions)
            )
            listed = await chat.product_client.call(
                "GET", "/conversations", params={**each, "limit": 1}, by=owner
            )
            assert listed["total"] == counted, each


@settings(
    max_examples=25,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=operations)
async def test_list_totals_equal_counted_rows_after_any_writes(
    chat: ChatClient, steps: list[tuple[Any, ...]]
) -> None:
    owner = await _account(chat)
    for name, *arguments in steps:
        await APPLY[name](owner, *arguments)
    await _assert_totals(chat, owner.tenant, _filters(owner))


async def test_the_migration_counts_the_conversations_already_there(
    product_client: ProductClientFactory,
) -> None:
    """Conversations written before migration 0005 (here: after taking it back down to
    0004, where nothing counts them) are counted when it is applied."""
    migration = revision(tollway_chat, "0005_chat_conversation_tally.py")
    async with open_chat(product_client, isolated=True) as chat:
        owner = await _account(chat)
        for box, contact, agent, status in [
            (0, 0, 0, "open"),
            (0, 1, None, "pending"),
            (1, 0, 1, "open"),
            (2, 1, 0, "pending"),
        ]:
            await create(owner, box, contact, agent, status)
        first, second = owner.agents
        engine = chat.gateway.database.engine
        await run_revision(engine, migration, "downgrade")
        async with engine.begin() as connection:  # writes at 0004, counted by nobody
            account = Conversation.account_id == owner.tenant.account_id
            await connection.execute(
                update(Conversation)
                .where(account, Conversation.agent_id == first)
                .values(status="resolved")
            )
            await connection.execute(delete(Agent).where(Agent.id == second))
            inserted = await connection.execute(
                insert(Conversation).values(
                    account_id=owner.tenant.account_id,
                    inbox_id=owner.inboxes[2],
                    contact_id=owner.contacts[0],
                    status="snoozed",
                    unread_count=0,
                    last_activity_at=utcnow(),
                    created_at=utcnow(),
                    updated_at=utcnow(),
                )
            )
            assert inserted.rowcount == 1
        await run_revision(engine, migration, "upgrade")
        assert (await owner.call("GET", "/conversations"))["total"] == 5
        assert (await owner.call("GET", "/conversations", params={"status": "resolved"}))[
            "total"
        ] == 2
        await _assert_totals(chat, owner.tenant, _filters(owner))
