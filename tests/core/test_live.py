"""The real-time bus (``tollway.live``): fan-out to a topic's subscribers in one
process and, through a real Redis, across processes (two buses with connections of
their own), with the subscription in effect when ``subscribe`` returns; and topics as
Server-Sent Events streams."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Iterable

import anyio
import msgspec
import pytest
import redis.asyncio as redis
from litestar.response import Stream

from tollway import (
    Gateway,
    LiveBus,
    LiveEvent,
    LocalLiveBus,
    RedisLiveBus,
    ServiceUnavailable,
    live_stream,
)
from tollway.live import QUEUE_SIZE
from tollway.testing import (
    REDIS_URL,
    Backend,
    GatewayFactory,
    RedisServer,
    free_port,
    redis_unreachable,
    unavailable,
)

WITHIN = 5.0
"""Seconds anything awaited here may take (it takes milliseconds)."""


# One process ------------------------------------------------------------------------


async def test_a_payload_reaches_every_subscriber_of_its_topic_only() -> None:
    bus = LocalLiveBus()
    first, second = await bus.subscribe("orders"), await bus.subscribe("orders")
    other = await bus.subscribe("stock")
    assert (bus.listeners("orders"), bus.listeners("stock"), bus.listeners("none")) == (2, 1, 0)
    assert await bus.publish("orders", b"one") == 2
    assert (first.get_nowait(), second.get_nowait()) == (b"one", b"one")
    assert other.empty()
    assert await bus.publish("nobody", b"lost") == 0


async def test_an_unsubscribed_queue_receives_nothing_more() -> None:
    bus = LocalLiveBus()
    leaving, staying = await bus.subscribe("orders"), await bus.subscribe("orders")
    await bus.unsubscribe("orders", leaving)
    assert bus.listeners("orders") == 1
    assert await bus.publish("orders", b"after") == 1
    assert (leaving.empty(), staying.get_nowait()) == (True, b"after")
    async with bus.subscription("orders") as queue:
        assert bus.listeners("orders") == 2
    assert queue.empty()
    with pytest.raises(RuntimeError):
        async with bus.subscription("orders"):
            raise RuntimeError("the block failed")
    assert bus.listeners("orders") == 1


async def test_a_full_queue_drops_what_does_not_fit_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = LocalLiveBus()
    stuck, reading = await bus.subscribe("orders"), await bus.subscribe("orders")
    for number in range(QUEUE_SIZE):
        assert await bus.publish("orders", str(number).encode()) == 2
        reading.get_nowait()
    with caplog.at_level(logging.WARNING, "tollway.live"):
        assert await bus.publish("orders", b"one too many") == 1
    assert reading.get_nowait() == b"one too many"
    assert stuck.qsize() == QUEUE_SIZE
    assert "a subscriber of orders is not reading; dropped" in caplog.text


async def test_the_gateway_bus_is_redis_with_redis_url(
    gateway_factory: GatewayFactory, backend: Backend
) -> None:
    gateway: Gateway = await gateway_factory(plugins=[])
    expected = LocalLiveBus if backend.redis_url is None else RedisLiveBus
    assert type(gateway.live) is expected
    await gateway.start()
    try:
        async with gateway.live.subscription("topic") as queue:
            assert await gateway.live.publish("topic", b"payload") == 1
            assert await asyncio.wait_for(queue.get(), WITHIN) == b"payload"
    finally:
        await gateway.stop()


# Across processes (Redis) -----------------------------------------------------------


@pytest.fixture
async def prefix() -> str:
    """A channel prefix no other test uses, on the shared Redis (which must answer)."""
    if problem := await redis_unreachable(REDIS_URL):
        unavailable(f"Redis at {REDIS_URL} unreachable: {problem}")
    return f"tollway-test:{secrets.token_hex(6)}:live:"


@pytest.fixture
async def processes(prefix: str) -> AsyncIterator[tuple[RedisLiveBus, RedisLiveBus]]:
    """Two processes' buses on the shared Redis."""
    buses = RedisLiveBus(REDIS_URL, prefix=prefix), RedisLiveBus(REDIS_URL, prefix=prefix)
    yield buses
    for bus in buses:
        await bus.stop()


async def test_a_payload_published_right_after_subscribe_returns_reaches_another_process(
    processes: tuple[RedisLiveBus, RedisLiveBus],
) -> None:
    here, there = processes
    for number in range(20):
        topic = f"orders/{number}"
        queue = await here.subscribe(topic)
        assert await there.publish(topic, b"at once") == 1, topic
        assert await asyncio.wait_for(queue.get(), WITHIN) == b"at once"
        await here.unsubscribe(topic, queue)
        assert await there.publish(topic, b"too late") == 0, topic


async def test_publish_counts_processes_and_each_fans_out_to_its_own_subscribers(
    processes: tuple[RedisLiveBus, RedisLiveBus], prefix: str
) -> None:
    here, there = processes
    first, second = await here.subscribe("stock"), await here.subscribe("stock")
    client = redis.Redis.from_url(REDIS_URL)
    try:  # the topic's channel, as another program would publish on it
        assert await client.publish(f"{prefix}stock", b"one") == 1  # one process, two queues
    finally:
        await client.aclose()
    for queue in (first, second):
        assert await asyncio.wait_for(queue.get(), WITHIN) == b"one"
    async with there.subscription("stock") as theirs:
        assert (here.listeners("stock"), there.listeners("stock")) == (2, 1)
        assert await here.publish("stock", b"two") == 2
        assert await asyncio.wait_for(theirs.get(), WITHIN) == b"two"
        assert await asyncio.wait_for(first.get(), WITHIN) == b"two"
    assert await asyncio.wait_for(second.get(), WITHIN) == b"two"
    await here.unsubscribe("stock", first)
    assert await there.publish("stock", b"three") == 1  # ``second`` is still there
    assert await asyncio.wait_for(second.get(), WITHIN) == b"three"
    await here.unsubscribe("stock", second)
    assert await there.publish("stock", b"four") == 0
    assert first.empty()


async def test_subscribing_without_redis_is_service_unavailable() -> None:
    bus = RedisLiveBus(f"redis://127.0.0.1:{free_port()}/0", prefix="tollway-test:")
    try:
        with pytest.raises(ServiceUnavailable):
            await bus.subscribe("orders")
        assert bus.listeners("orders") == 0
    finally:
        await bus.stop()


async def test_subscriptions_come_back_with_redis(own_redis: RedisServer) -> None:
    here, there = (RedisLiveBus(own_redis.url, prefix="p:") for _ in range(2))
    try:
        queue = await here.subscribe("orders")
        own_redis.stop()
        own_redis.start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WITHIN
        # Published until the reader has reconnected and subscribed again.
        while await there.publish("orders", b"back") == 0:
            assert loop.time() < deadline, "never resubscribed"
            await asyncio.sleep(0.05)
        assert await asyncio.wait_for(queue.get(), WITHIN) == b"back"
    finally:
        await here.stop()
        await there.stop()


# Server-Sent Events -----------------------------------------------------------------


def test_an_event_is_framed_one_data_line_per_line_of_its_payload() -> None:
    event = LiveEvent(b'{"a": 1}\n{"b": 2}\r\nthird\rfourth', event="order", id="ord_7")
    assert event.encode() == (
        b'id: ord_7\nevent: order\ndata: {"a": 1}\ndata: {"b": 2}\ndata: third\ndata: fourth\n\n'
    )
    assert LiveEvent(b"").encode() == b"data: \n\n"
    assert LiveEvent(b" spaced").encode() == b"data:  spaced\n\n"  # one space is the field's
    for field in ("event", "id"):
        with pytest.raises(ValueError, match=field):
            LiveEvent(b"x", **{field: "two\nlines"})


def _text(payload: bytes) -> LiveEvent | None:
    if payload == b"skip":
        return None
    return LiveEvent(payload, event="text")


def _body(stream: Stream) -> AsyncGenerator[bytes, None]:
    iterator = stream.iterator
    assert isinstance(iterator, AsyncGenerator)
    return iterator


async def _chunks(stream: Stream, count: int | None = None) -> list[bytes]:
    """The stream's first ``count`` chunks, then closed as a server closes it; all of
    them, to its end, without ``count``."""
    iterator = _body(stream)
    received: list[bytes] = []
    async with asyncio.timeout(WITHIN):
        async for chunk in iterator:
            received.append(chunk)
            if len(received) == count:
                await iterator.aclose()
    return received


async def test_a_stream_sends_first_then_what_is_published_until_end_after() -> None:
    bus = LocalLiveBus()

    async def snapshot() -> Iterable[LiveEvent]:
        # A change published while the document is read arrives after it.
        assert await bus.publish("doc", b"changed meanwhile") == 1
        return [LiveEvent(b"now", event="document")]

    stream = await live_stream(
        bus, "doc", _text, first=snapshot, max_seconds=60, end_after=lambda e: e.data == b"end"
    )
    assert stream.media_type == "text/event-stream"
    assert stream.headers["Cache-Control"] == "no-cache"
    for payload in (b"skip", b"line\nbreak", b"end", b"after the end"):
        await bus.publish("doc", payload)
    assert await _chunks(stream) == [
        b"event: document\ndata: now\n\n",
        b"event: text\ndata: changed meanwhile\n\n",
        b"event: text\ndata: line\ndata: break\n\n",
        b"event: text\ndata: end\n\n",
    ]
    assert bus.listeners("doc") == 0


def _decoded(payload: bytes) -> LiveEvent:
    return LiveEvent(msgspec.json.encode(msgspec.json.decode(payload)))


async def test_a_stream_drops_what_frame_cannot_decode_and_keeps_alive(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = LocalLiveBus()
    stream = await live_stream(bus, "doc", _decoded, max_seconds=60, heartbeat=0.01)
    with caplog.at_level(logging.WARNING, "tollway.live"):
        await bus.publish("doc", b"not json")
        await bus.publish("doc", b"[1]")
        # Nothing more is published: what follows the event is a heartbeat.
        assert await _chunks(stream, 2) == [b"data: [1]\n\n", b": keep-alive\n\n"]
    assert "undecodable payload on doc; dropped" in caplog.text
    assert bus.listeners("doc") == 0


async def test_a_stream_ends_after_max_seconds() -> None:
    bus = LocalLiveBus()
    stream = await live_stream(bus, "doc", _text, first=_opening, max_seconds=0.05)
    assert await _chunks(stream) == [b"data: ready\n\n"]
    assert bus.listeners("doc") == 0


async def test_a_stream_whose_first_events_fail_leaves_no_subscription() -> None:
    bus = LocalLiveBus()

    async def missing() -> list[LiveEvent]:
        assert bus.listeners("doc") == 1  # subscribed before reading
        raise LookupError("no such document")

    with pytest.raises(LookupError):
        await live_stream(bus, "doc", _text, first=missing, max_seconds=60)
    assert bus.listeners("doc") == 0


async def _abandoned(bus: LiveBus, topic: str) -> None:
    """A stream whose client goes away while it waits, as Litestar ends it: by cancelling
    the anyio scope it is sent in (every later await in it is cancelled too)."""
    stream = await live_stream(bus, topic, _text, first=_opening, max_seconds=60)
    started = anyio.Event()

    async def client() -> None:
        async for _ in _body(stream):
            started.set()

    async with anyio.create_task_group() as sending:
        sending.start_soon(client)
        with anyio.fail_after(WITHIN):
            await started.wait()
        sending.cancel_scope.cancel()


async def _opening() -> list[LiveEvent]:
    return [LiveEvent(b"ready")]


class SlowToLeave(LocalLiveBus):
    """A bus whose unsubscribe waits, as Redis's does while another subscription holds
    its lock."""

    def __init__(self) -> None:
        super().__init__()
        self.left = asyncio.Event()

    async def unsubscribe(self, topic: str, queue: asyncio.Queue[bytes]) -> None:
        await asyncio.sleep(0.01)
        await super().unsubscribe(topic, queue)
        self.left.set()


async def test_a_stream_unsubscribes_when_its_client_goes_away() -> None:
    bus = SlowToLeave()
    await _abandoned(bus, "doc")
    await asyncio.wait_for(bus.left.wait(), WITHIN)
    assert bus.listeners("doc") == 0


async def test_a_stream_unsubscribes_from_redis_when_its_client_goes_away(
    processes: tuple[RedisLiveBus, RedisLiveBus],
) -> None:
    here, there = processes
    await _abandoned(here, "doc")
    assert here.listeners("doc") == 0
    # Not counted as a receiver any more: the UNSUBSCRIBE was not cut short.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN
    while await there.publish("doc", b"anyone?"):
        assert loop.time() < deadline, "still subscribed in Redis"
        await asyncio.sleep(0.02)
