"""The ``chat.conversations`` report: conversations opened and resolved per day, week or
month of the caller's zone, and the median wait for a first reply, over conversations
made through the API at times the test sets (the chat service's clock)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from chat_client import CHAT, ChatClient, inbox, open_chat

from tollway import Granularity, Period, ReportData
from tollway.testing import ProductClientFactory, Tenant
from tollway_analytics.testing import analytics_key, assert_agrees, read_three_ways


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@dataclass
class Clock:
    """The chat service's ``utcnow``: the time the test says it is."""

    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __call__(self) -> datetime:
        return self.now


@dataclass(frozen=True)
class Thread:
    id: int
    token: str
    """The contact's stream token, to write in as the contact."""


@dataclass
class Desk:
    """One account's support desk, working at the clock's times."""

    chat: ChatClient
    clock: Clock
    tenant: Tenant
    inbox: int
    names: itertools.count[int] = field(default_factory=itertools.count)

    async def call(self, method: str, path: str, body: dict[str, Any], expect: int) -> Any:
        return await self.chat.product_client.call(
            method, path, json=body, by=self.tenant, expect=expect
        )

    async def open(self, at: str, **fields: Any) -> Thread:
        """A conversation opened at ``at`` with a new contact."""
        self.clock.now = utc(at)
        name = f"contact{next(self.names)}"
        contact = await self.call(
            "POST", "/contacts", {"name": name, "email": f"{name}@example.com"}, 201
        )
        body = {"inbox_id": self.inbox, "contact_id": contact["id"], **fields}
        conversation = await self.call("POST", "/conversations", body, 201)
        token = await self.call("POST", f"/contacts/{contact['id']}/stream-token", {}, 201)
        return Thread(conversation["id"], token["token"])

    async def contact_writes(self, thread: Thread, at: str) -> None:
        self.clock.now = utc(at)
        written = await self.chat.client.post(
            f"{CHAT}/stream/messages",
            json={"content": "Hello?", "conversation_id": thread.id},
            params={"token": thread.token},
        )
        assert written.status_code == 201, written.text

    async def reply(self, thread: Thread, at: str, *, private: bool = False) -> None:
        self.clock.now = utc(at)
        body = {"content": "On it.", "private": private}
        await self.call("POST", f"/conversations/{thread.id}/messages", body, 201)

    async def resolve(self, thread: Thread, at: str) -> None:
        self.clock.now = utc(at)
        await self.call("PATCH", f"/conversations/{thread.id}", {"status": "resolved"}, 200)

    async def answered(self, opened: str, asked: str, replied: str | None) -> Thread:
        """A conversation whose contact wrote at ``asked`` and, unless ``None``, got a
        reply at ``replied``."""
        thread = await self.open(opened)
        await self.contact_writes(thread, asked)
        if replied is not None:
            await self.reply(thread, replied)
        return thread


@asynccontextmanager
async def desks(
    product_client: ProductClientFactory,
    monkeypatch: pytest.MonkeyPatch,
    plugins: tuple[str, ...] = ("chat",),
) -> AsyncIterator[tuple[Desk, Desk]]:
    """The owner's desk and the other account's, one agent each, one clock."""
    clock = Clock()
    monkeypatch.setattr("tollway_chat.service.utcnow", clock)
    async with open_chat(product_client, plugins=list(plugins)) as chat:
        found = []
        for tenant in (chat.owner, chat.other):
            desk = Desk(chat, clock, tenant, await inbox(chat.gateway, tenant))
            body = {"name": "Grace", "email": "grace@support.example"}
            await desk.call("POST", "/agents", body, 201)
            found.append(desk)
        yield found[0], found[1]


async def seed(owner: Desk, other: Desk) -> None:
    """The owner's conversations of 4 to 10 March 2025 (first replies in seconds):

    - 5 March: 60, 120 (after a private note), 600; the last resolved, then reopened;
    - 6 March: 45 (after an opening message of the agent's), 100, none; the 5th's first
      conversation resolved;
    - 7 March at 23:30 (the 8th in Tokyo): 30, resolved at 23:50;
    - 10 March: 200;
    - 4 March: 1,000, resolved on the 5th.

    The other account's: one on 5 March, answered in 5 s and resolved that day."""
    first = await owner.answered("2025-03-05T09:00:00", "2025-03-05T09:00:10", None)
    await owner.reply(first, "2025-03-05T09:01:10")
    second = await owner.answered("2025-03-05T10:00:00", "2025-03-05T10:00:00", None)
    await owner.reply(second, "2025-03-05T10:00:30", private=True)
    await owner.reply(second, "2025-03-05T10:02:00")
    third = await owner.answered(
        "2025-03-05T11:00:00", "2025-03-05T11:00:00", "2025-03-05T11:10:00"
    )
    await owner.contact_writes(third, "2025-03-05T11:20:00")
    await owner.reply(third, "2025-03-05T11:21:00")
    await owner.resolve(third, "2025-03-05T12:00:00")
    await owner.contact_writes(third, "2025-03-05T13:00:00")  # opens it again

    greeted = await owner.open("2025-03-06T08:00:00", message={"content": "Welcome!"})
    await owner.contact_writes(greeted, "2025-03-06T08:30:00")
    await owner.reply(greeted, "2025-03-06T08:30:45")
    await owner.answered("2025-03-06T09:00:00", "2025-03-06T09:00:00", "2025-03-06T09:01:40")
    await owner.answered("2025-03-06T12:00:00", "2025-03-06T12:00:00", None)
    await owner.resolve(first, "2025-03-06T10:00:00")

    late = await owner.answered("2025-03-07T23:30:00", "2025-03-07T23:30:00", "2025-03-07T23:30:30")
    await owner.resolve(late, "2025-03-07T23:50:00")
    await owner.answered("2025-03-10T10:00:00", "2025-03-10T10:00:00", "2025-03-10T10:03:20")
    before = await owner.answered(
        "2025-03-04T12:00:00", "2025-03-04T12:00:00", "2025-03-04T12:16:40"
    )
    await owner.resolve(before, "2025-03-05T12:00:00")

    theirs = await other.answered(
        "2025-03-05T09:00:00", "2025-03-05T09:00:00", "2025-03-05T09:00:05"
    )
    await other.resolve(theirs, "2025-03-05T09:30:00")


async def report(
    desk: Desk, start: date, end: date, granularity: Granularity = "day", tz: str = "UTC"
) -> ReportData:
    gateway = desk.chat.gateway
    period = Period(desk.tenant.account_id, start, end, granularity, ZoneInfo(tz))
    return await gateway.registry.reports["chat.conversations"].compute(gateway, period)


def point(day: date, opened: int, resolved: int, median: float | None) -> dict[str, Any]:
    return {
        "date": day,
        "opened": opened,
        "resolved": resolved,
        "median_first_response_seconds": median,
    }


async def test_days_in_utc_and_in_tokyo(
    product_client: ProductClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with desks(product_client, monkeypatch) as (owner, other):
        await seed(owner, other)
        start, end = date(2025, 3, 5), date(2025, 3, 8)
        in_utc = await report(owner, start, end)
        assert in_utc.series == [
            point(date(2025, 3, 5), 3, 1, 120),  # median of 60, 120 and 600
            point(date(2025, 3, 6), 3, 1, 72.5),  # of 45 and 100; one not answered
            point(date(2025, 3, 7), 1, 1, 30),
            point(date(2025, 3, 8), 0, 0, None),
        ]
        # The period's median: of 30, 45, 60, 100, 120 and 600.
        assert in_utc.summary == {
            "opened": 7,
            "resolved": 3,
            "median_first_response_seconds": 80,
        }
        in_tokyo = await report(owner, start, end, tz="Asia/Tokyo")
        assert in_tokyo.series == [
            point(date(2025, 3, 5), 3, 1, 120),
            point(date(2025, 3, 6), 3, 1, 72.5),
            point(date(2025, 3, 7), 0, 0, None),
            point(date(2025, 3, 8), 1, 1, 30),
        ]
        assert in_tokyo.summary == in_utc.summary
        # 4 March in Tokyo ends at 15:00 UTC: the 4th's conversation falls in it.
        assert (
            await report(owner, date(2025, 3, 4), date(2025, 3, 4), tz="Asia/Tokyo")
        ).series == [point(date(2025, 3, 4), 1, 0, 1000)]


async def test_weeks_from_monday_and_months(
    product_client: ProductClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with desks(product_client, monkeypatch) as (owner, other):
        await seed(owner, other)
        # A Wednesday to a Tuesday: the first week is dated its Monday, before the start.
        weeks = await report(owner, date(2025, 3, 5), date(2025, 3, 11), "week")
        assert weeks.series == [
            point(date(2025, 3, 3), 7, 3, 80),
            point(date(2025, 3, 10), 1, 0, 200),
        ]
        months = await report(owner, date(2025, 2, 27), date(2025, 4, 2), "month")
        # March's median: of 30, 45, 60, 100, 120, 200, 600 and 1,000.
        assert months.series == [
            point(date(2025, 2, 1), 0, 0, None),
            point(date(2025, 3, 1), 9, 3, 110),
            point(date(2025, 4, 1), 0, 0, None),
        ]
        assert months.summary == {
            "opened": 9,
            "resolved": 3,
            "median_first_response_seconds": 110,
        }


async def test_another_accounts_conversations_are_its_own(
    product_client: ProductClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with desks(product_client, monkeypatch) as (owner, other):
        await seed(owner, other)
        theirs = await report(other, date(2025, 3, 4), date(2025, 3, 6))
        assert theirs.series == [
            point(date(2025, 3, 4), 0, 0, None),
            point(date(2025, 3, 5), 1, 1, 5),
            point(date(2025, 3, 6), 0, 0, None),
        ]
        assert theirs.summary == {"opened": 1, "resolved": 1, "median_first_response_seconds": 5}
        nothing = await report(owner, date(2025, 5, 1), date(2025, 5, 2), tz="America/New_York")
        assert nothing.series == [
            point(date(2025, 5, 1), 0, 0, None),
            point(date(2025, 5, 2), 0, 0, None),
        ]
        assert nothing.summary == {
            "opened": 0,
            "resolved": 0,
            "median_first_response_seconds": None,
        }


async def test_the_analytics_api_gives_the_same_numbers_as_json_csv_and_pdf(
    product_client: ProductClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with desks(product_client, monkeypatch, ("chat", "analytics")) as (owner, other):
        await seed(owner, other)
        data = await report(owner, date(2025, 3, 4), date(2025, 3, 10), "day", "Asia/Tokyo")
        gateway = owner.chat.gateway
        headers = await analytics_key(gateway, owner.tenant.account_id)
        params = {"start_date": "2025-03-04", "end_date": "2025-03-10", "tz": "Asia/Tokyo"}
        read = await read_three_ways(owner.chat.client, headers, "chat.conversations", params)
    assert data.summary["opened"] == 9
    assert_agrees(read, gateway.registry.reports["chat.conversations"], data)
    medians = [row["median_first_response_seconds"] for row in read.csv]
    assert medians[0] == str(data.series[0]["median_first_response_seconds"])
    assert "" in medians  # a day whose conversations nobody answered
