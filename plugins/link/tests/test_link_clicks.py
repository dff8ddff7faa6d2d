"""The click queue: clicks added by redirects are stored once and counted once, off
the request path, in the embedded profile (straight to the database) and the
scale-out one (through a Redis stream and its writers)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from clicks_client import BROWSER, CRAWLER, PHONE, ClicksClient, open_clicks

from tollway.testing import REDIS_URL, ProductClientFactory
from tollway_link import clicks as clicks_module
from tollway_link import stream as click_stream
from tollway_link.capture import RawClick
from tollway_link.stream import FIELD, GROUP, ClickStream, Entry

PROFILES = pytest.mark.parametrize("redis", [False, True], ids=["embedded", "redis"])
BACKED_UP = {"click_batch_size": 2, "click_flush_interval": 3600}
"""Settings under which a few clicks make a backlog (a batch is two clicks) and only a
full batch, never the clock, starts a write."""


def watch_writes(link: ClicksClient, failures: int = 0) -> tuple[list[int], asyncio.Event]:
    """Record the size of every batch the queue writes, failing the first ``failures``
    as an unreachable database would; the event is set by each write that succeeds."""
    sizes: list[int] = []
    written = asyncio.Event()
    write = link.clicks.write

    async def watched(clicks: Sequence[RawClick]) -> int:
        sizes.append(len(clicks))
        if len(sizes) <= failures:
            raise ConnectionRefusedError("the database is down")
        stored = await write(clicks)
        written.set()
        return stored

    link.clicks.write = watched  # type: ignore[method-assign]
    return sizes, written


@PROFILES
async def test_added_clicks_are_stored_and_counted_once(
    product_client: ProductClientFactory, redis: bool
) -> None:
    async with open_clicks(product_client, redis=redis) as link:
        _, key = await link.link()
        for _ in range(3):
            link.clicks.add(link.click(key))
        assert link.clicks.buffered == 3
        await link.clicks.flush()
        assert link.clicks.buffered == 0
        assert await link.stored(key) == (3, 3)
        await link.clicks.flush()
        assert await link.stored(key) == (3, 3)


@PROFILES
async def test_a_batch_written_twice_is_stored_and_counted_once(
    product_client: ProductClientFactory, redis: bool
) -> None:
    async with open_clicks(product_client, redis=redis) as link:
        public_id, key = await link.link()
        batch = [link.click(key) for _ in range(4)]
        assert await link.clicks.write(batch) == 4
        assert await link.clicks.write(batch) == 0
        assert await link.clicks.write([*batch[:2], link.click(key), batch[0]]) == 1
        assert await link.stored(key) == (5, 5)
        analytics = await link.product_client.call("GET", f"/analytics/{public_id}")
        assert analytics["total_clicks"] == 5
        assert analytics["unique_visitors"] == 1
        assert analytics["clicks_by_day"][0]["clicks"] == 5
        assert analytics["top_referrers"] == [{"referrer": "(direct)", "clicks": 5}]
        assert analytics["devices"] == {"mobile": 0, "desktop": 5, "tablet": 0}


@PROFILES
async def test_bots_and_head_requests_are_stored_but_not_counted(
    product_client: ProductClientFactory, redis: bool
) -> None:
    async with open_clicks(product_client, redis=redis) as link:
        _, key = await link.link()
        for click in (
            link.click(key, user_agent=PHONE),
            link.click(key, head=True),
            link.click(key, user_agent=CRAWLER),
            link.click(key, user_agent=""),
        ):
            link.clicks.add(click)
        await link.clicks.flush()
        assert await link.stored(key) == (4, 1)
        assert await link.bots(key) == [False, True, True, True]


@PROFILES
async def test_clicks_of_a_link_deleted_meanwhile_are_dropped(
    product_client: ProductClientFactory, redis: bool
) -> None:
    async with open_clicks(product_client, redis=redis) as link:
        gone, gone_key = await link.link()
        _, kept_key = await link.link()
        link.clicks.add(link.click(gone_key))
        link.clicks.add(link.click(kept_key))
        await link.product_client.call("DELETE", f"/links/{gone}", expect=204)
        await link.clicks.flush()
        assert await link.stored(kept_key) == (1, 1)
        assert await link.stored(gone_key) == (0, 0)
        assert await link.clicks.write([link.click(gone_key)]) == 0


async def test_a_full_batch_is_written_at_once(product_client: ProductClientFactory) -> None:
    settings = {"click_batch_size": 3, "click_flush_interval": 3600}
    async with open_clicks(product_client, settings=settings) as link:
        _, key = await link.link()
        sizes, written = watch_writes(link)
        for _ in range(3):
            link.clicks.add(link.click(key))
        await asyncio.wait_for(written.wait(), 10)
        assert sizes == [3]
        assert await link.stored(key) == (3, 3)


async def test_clicks_arriving_during_a_write_wait_for_a_full_batch(
    product_client: ProductClientFactory,
) -> None:
    """A write ending is no reason to write what arrived meanwhile: that would make a
    busy process's batches only as big as one write is long."""
    settings = {"click_batch_size": 3, "click_flush_interval": 3600}
    async with open_clicks(product_client, settings=settings) as link:
        _, key = await link.link()
        write, release = link.clicks.write, asyncio.Event()

        async def held(clicks: Sequence[RawClick]) -> int:
            await release.wait()
            return await write(clicks)

        link.clicks.write = held  # type: ignore[method-assign]
        sizes, written = watch_writes(link)
        for _ in range(3):
            link.clicks.add(link.click(key))
        for _ in range(5):
            await asyncio.sleep(0)
        release.set()  # (before asserting: a failure must not leave the writer held)
        assert sizes == [3]
        link.clicks.add(link.click(key))  # during the write
        await asyncio.wait_for(written.wait(), 10)
        written.clear()
        for _ in range(5):
            await asyncio.sleep(0)
        assert sizes == [3]
        assert link.clicks.buffered == 1
        link.clicks.add(link.click(key))
        link.clicks.add(link.click(key))
        await asyncio.wait_for(written.wait(), 10)
        assert sizes == [3, 3]
        assert await link.stored(key) == (6, 6)


async def test_a_click_waits_at_most_the_flush_interval(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client, settings={"click_flush_interval": 0.01}) as link:
        _, key = await link.link()
        sizes, written = watch_writes(link)
        link.clicks.add(link.click(key))
        await asyncio.wait_for(written.wait(), 10)
        assert sizes == [1]
        assert await link.stored(key) == (1, 1)


async def test_a_failed_write_keeps_its_batch_and_is_retried(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client, settings={"click_flush_interval": 0.01}) as link:
        _, key = await link.link()
        sizes, written = watch_writes(link, failures=2)
        link.clicks.add(link.click(key))
        link.clicks.add(link.click(key))
        await asyncio.wait_for(written.wait(), 10)
        assert sizes == [2, 2, 2]
        assert await link.stored(key) == (2, 2)


async def test_clicks_past_the_buffers_bound_are_dropped_and_counted(
    product_client: ProductClientFactory,
) -> None:
    settings = {"click_flush_interval": 3600}
    async with open_clicks(product_client, settings=settings) as link:
        _, key = await link.link()
        link.clicks.limit = 2
        for _ in range(5):
            link.clicks.add(link.click(key))
        assert (link.clicks.buffered, link.clicks.dropped) == (2, 3)
        await link.clicks.flush()
        assert (link.clicks.buffered, link.clicks.dropped) == (0, 0)
        assert await link.stored(key) == (2, 2)


@PROFILES
async def test_stopping_writes_what_is_buffered(
    product_client: ProductClientFactory, redis: bool
) -> None:
    async with open_clicks(
        product_client, redis=redis, settings={"click_flush_interval": 3600}
    ) as link:
        _, key = await link.link()
        link.clicks.add(link.click(key))
        link.clicks.add(link.click(key))
    # The gateway has stopped: its clicks are stored, or in the stream for any writer.
    if redis:
        assert link.clicks.stream is not None
        writer = ClickStream(REDIS_URL, link.clicks.stream.name, link.clicks.write, batch_size=10)
        await writer.drain()
        await writer.close()
    assert await link.stored(key) == (2, 2)


async def test_a_writer_that_dies_before_acknowledging_leaves_its_clicks_to_another(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client, redis=True, run_jobs=False) as link:
        _, key = await link.link()
        for _ in range(5):
            link.clicks.add(link.click(key))
        await link.clicks.flush()  # this gateway only sends: run_jobs is off
        assert link.clicks.stream is not None
        name = link.clicks.stream.name
        dead, survivor = (
            ClickStream(REDIS_URL, name, link.clicks.write, batch_size=500, consumer=consumer)
            for consumer in ("dead", "survivor")
        )
        await dead.create_group()
        read = await dead.read()
        assert len(read) == 1  # the flushed batch is one entry
        assert await survivor.read() == []
        assert await survivor.claim(min_idle=60) == 0  # not abandoned yet
        assert await link.stored(key) == (0, 0)

        assert await survivor.claim(min_idle=0) == 5
        assert await link.stored(key) == (5, 5)
        redis = survivor.redis
        assert (await redis.xpending(name, GROUP))["pending"] == 0
        # The dead writer, holding nothing now, is no longer in the group.
        consumers = await redis.xinfo_consumers(name, GROUP)
        assert [consumer["name"] for consumer in consumers] == [b"survivor"]
        assert await redis.xlen(name) == 0
        # The writer was only slow: it stores what it read after all, and nothing changes.
        assert await dead.store(read) == 0
        assert await link.stored(key) == (5, 5)
        for stream in (dead, survivor):
            await stream.close()


async def test_batches_are_sent_as_one_entry_each_and_bad_entries_are_dropped(
    product_client: ProductClientFactory,
) -> None:
    settings = {"click_batch_size": 2, "click_flush_interval": 3600}
    async with open_clicks(product_client, redis=True, run_jobs=False, settings=settings) as link:
        _, key = await link.link()
        stream = link.clicks.stream
        assert stream is not None
        link.clicks.limit = 10
        await stream.redis.xadd(stream.name, {FIELD: b"not a batch"})
        for _ in range(5):
            link.clicks.add(link.click(key))
        assert await stream.redis.xlen(stream.name) == 1
        await link.clicks.flush()
        assert await stream.redis.xlen(stream.name) == 4
        writer = ClickStream(REDIS_URL, stream.name, link.clicks.write, batch_size=2)
        assert await writer.drain() == 5
        assert await stream.redis.xlen(stream.name) == 0
        assert await link.stored(key) == (5, 5)
        await writer.close()


async def test_a_writer_lets_entries_gather_and_stores_them_in_one_transaction(
    product_client: ProductClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Gathering for an hour: only stopping the writer ends the wait, so what it stores
    # does not depend on how fast anything runs.
    monkeypatch.setattr(click_stream, "GATHER", 3600.0)
    async with open_clicks(product_client, redis=True, run_jobs=False) as link:
        _, key = await link.link()
        assert link.clicks.stream is not None
        name = link.clicks.stream.name
        sizes: list[int] = []

        async def write(clicks: Sequence[RawClick]) -> int:
            sizes.append(len(clicks))
            return await link.clicks.write(clicks)

        writer = ClickStream(REDIS_URL, name, write, batch_size=500)
        read, first_read = writer.read, asyncio.Event()

        async def reading(*, block: float | None = None, pending: bool = False) -> list[Entry]:
            entries = await read(block=block, pending=pending)
            if entries:
                first_read.set()
            return entries

        writer.read = reading  # type: ignore[method-assign]
        link.clicks.add(link.click(key))
        await link.clicks.flush()  # the first entry
        writer.start()
        await asyncio.wait_for(first_read.wait(), 10)
        for _ in range(2):
            link.clicks.add(link.click(key))
        await link.clicks.flush()  # the second, while the writer gathers
        assert sizes == []
        await writer.stop()  # ends the gathering: both entries are stored, together
        await writer.close()
        assert sizes == [3]
        assert await link.stored(key) == (3, 3)
        assert (await link.clicks.stream.redis.xpending(name, GROUP))["pending"] == 0


async def test_redirects_wait_for_a_writer_that_has_fallen_behind_and_lose_nothing(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client, settings=BACKED_UP) as link:
        _, key = await link.link(code="busy")
        write, release = link.clicks.write, asyncio.Event()

        async def slow(clicks: Sequence[RawClick]) -> int:
            await release.wait()
            return await write(clicks)

        link.clicks.write = slow  # type: ignore[method-assign]
        room, waiting = link.clicks.room, asyncio.Event()

        async def watched_room() -> None:
            waiting.set()
            await room()

        link.clicks.room = watched_room  # type: ignore[method-assign]
        for _ in range(link.clicks.backlog - 1):
            link.clicks.add(link.click(key))
        assert not link.clicks.crowded
        redirect = asyncio.create_task(link.client.get("/l/busy", headers={"User-Agent": BROWSER}))
        await asyncio.wait_for(waiting.wait(), 10)  # its click made the queue crowded
        assert link.clicks.crowded
        assert not redirect.done()
        release.set()
        answer = await asyncio.wait_for(redirect, 10)
        assert answer.status_code == 302
        await link.clicks.flush()
        assert link.clicks.dropped == 0
        assert await link.stored(key) == (link.clicks.backlog, link.clicks.backlog)


async def test_redirects_do_not_wait_on_a_writer_that_fails(
    product_client: ProductClientFactory,
) -> None:
    async with open_clicks(product_client, settings=BACKED_UP) as link:
        _, key = await link.link(code="down")
        write, failed = link.clicks.write, asyncio.Event()

        async def failing(clicks: Sequence[RawClick]) -> int:
            failed.set()
            raise ConnectionRefusedError("the database is down")

        link.clicks.write = failing  # type: ignore[method-assign]
        for _ in range(link.clicks.backlog):
            link.clicks.add(link.click(key))
        await asyncio.wait_for(failed.wait(), 10)
        assert link.clicks.buffered == link.clicks.backlog
        assert not link.clicks.crowded  # an outage is buffered, not waited for
        answer = await asyncio.wait_for(
            link.client.get("/l/down", headers={"User-Agent": BROWSER}), 10
        )
        assert answer.status_code == 302
        link.clicks.write = write  # type: ignore[method-assign]
        await link.clicks.flush()
        assert await link.stored(key) == (link.clicks.backlog + 1, link.clicks.backlog + 1)


async def test_a_redirect_waits_for_a_stuck_writer_only_so_long(
    product_client: ProductClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clicks_module, "ROOM_WAIT", 0.0)
    async with open_clicks(product_client, settings=BACKED_UP) as link:
        _, key = await link.link(code="stuck")
        write, stuck, release = link.clicks.write, asyncio.Event(), asyncio.Event()

        async def hanging(clicks: Sequence[RawClick]) -> int:
            stuck.set()  # a database that neither answers nor fails
            await release.wait()
            return await write(clicks)

        link.clicks.write = hanging  # type: ignore[method-assign]
        try:
            for _ in range(link.clicks.backlog):
                link.clicks.add(link.click(key))
            await asyncio.wait_for(stuck.wait(), 10)
            assert link.clicks.crowded
            answer = await asyncio.wait_for(
                link.client.get("/l/stuck", headers={"User-Agent": BROWSER}), 10
            )
            assert answer.status_code == 302
        finally:
            release.set()  # the writer finishes even when the test fails
        await link.clicks.flush()
        assert await link.stored(key) == (link.clicks.backlog + 1, link.clicks.backlog + 1)
