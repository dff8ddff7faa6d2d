"""Fan-out of live_chat messages to the contact streams open on any gateway process.

A contact's stream (``GET /v1/chat/stream``) is open on one process; the delivery job
that sends a message to it may run on another. The bus joins them:

- :class:`LocalStreamBus` (the embedded default, without ``redis_url``): the streams
  of this process only, which is all there is with one process.
- :class:`RedisStreamBus` (with ``redis_url``): Redis publish/subscribe on one channel
  per contact, ``<stream_channel_prefix><account>:<contact>``. A process subscribes to
  a contact's channel while it holds one of the contact's streams open, so the answer
  to ``PUBLISH`` is the number of processes the message reached; zero means the
  contact has no stream open anywhere, and the send is retried like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from typing import Any, Protocol

import msgspec

from tollway import ServiceUnavailable
from tollway_chat.channels import OutboundMessage

log = logging.getLogger("tollway.chat.bus")

Key = tuple[int, int]
"""``(account_id, contact_id)``"""
QUEUE_SIZE = 1000


class StreamBus(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def subscribe(self, account_id: int, contact_id: int) -> asyncio.Queue[OutboundMessage]:
        """A queue receiving the contact's messages until :meth:`unsubscribe`; the
        subscription is in effect when this returns."""
        ...

    async def unsubscribe(
        self, account_id: int, contact_id: int, queue: asyncio.Queue[OutboundMessage]
    ) -> None: ...

    async def publish(self, message: OutboundMessage) -> int:
        """Send ``message`` to its contact's streams; how many received it (0: none)."""
        ...

    def listeners(self, account_id: int, contact_id: int) -> int:
        """The contact's streams open on this process."""
        ...


class LocalStreamBus:
    """The streams of this process."""

    def __init__(self) -> None:
        self._streams: dict[Key, set[asyncio.Queue[OutboundMessage]]] = defaultdict(set)

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def add(self, key: Key) -> asyncio.Queue[OutboundMessage]:
        queue: asyncio.Queue[OutboundMessage] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self._streams[key].add(queue)
        return queue

    def remove(self, key: Key, queue: asyncio.Queue[OutboundMessage]) -> bool:
        """Forget ``queue``; True when it was the key's last one."""
        self._streams[key].discard(queue)
        if self._streams[key]:
            return False
        del self._streams[key]
        return True

    def put(self, message: OutboundMessage) -> int:
        delivered = 0
        for queue in list(self._streams.get((message.account_id, message.contact_id), ())):
            try:
                queue.put_nowait(message)
                delivered += 1
            except asyncio.QueueFull:
                log.warning("stream of contact %s is not reading; dropped", message.contact_id)
        return delivered

    async def subscribe(self, account_id: int, contact_id: int) -> asyncio.Queue[OutboundMessage]:
        return self.add((account_id, contact_id))

    async def unsubscribe(
        self, account_id: int, contact_id: int, queue: asyncio.Queue[OutboundMessage]
    ) -> None:
        self.remove((account_id, contact_id), queue)

    async def publish(self, message: OutboundMessage) -> int:
        return self.put(message)

    def listeners(self, account_id: int, contact_id: int) -> int:
        return len(self._streams.get((account_id, contact_id), ()))


class RedisStreamBus:
    """Contact streams of every process sharing one Redis."""

    def __init__(self, url: str, *, prefix: str) -> None:
        import redis.asyncio as redis

        self._redis = redis.Redis.from_url(url, socket_connect_timeout=2)
        self._pubsub = self._redis.pubsub()
        self._prefix = prefix
        self._local = LocalStreamBus()
        self._confirmations: dict[str, asyncio.Future[None]] = {}
        self._lock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None

    def _channel(self, key: Key) -> str:
        return f"{self._prefix}{key[0]}:{key[1]}"

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None
        with contextlib.suppress(Exception):
            await self._pubsub.aclose()  # type: ignore[no-untyped-call]
        await self._redis.aclose()

    async def subscribe(self, account_id: int, contact_id: int) -> asyncio.Queue[OutboundMessage]:
        key = (account_id, contact_id)
        async with self._lock:
            first = not self._local.listeners(*key)
            queue = self._local.add(key)
            if first:
                try:
                    await self._join(self._channel(key))
                except Exception as error:
                    self._local.remove(key, queue)
                    log.warning("could not subscribe to the stream bus: %s", error)
                    raise ServiceUnavailable("Live chat is unavailable; try again") from None
        return queue

    async def _join(self, channel: str) -> None:
        confirmed = asyncio.get_running_loop().create_future()
        self._confirmations[channel] = confirmed
        try:
            await self._pubsub.subscribe(channel)
            if self._reader is None:
                self._reader = asyncio.create_task(self._read(), name="tollway-chat-bus")
            # Subscribed once Redis says so: a message published after this returns
            # reaches the stream.
            async with asyncio.timeout(5):
                await confirmed
        finally:
            self._confirmations.pop(channel, None)

    async def unsubscribe(
        self, account_id: int, contact_id: int, queue: asyncio.Queue[OutboundMessage]
    ) -> None:
        key = (account_id, contact_id)
        async with self._lock:
            if self._local.remove(key, queue):
                try:
                    await self._pubsub.unsubscribe(self._channel(key))
                except Exception as error:  # the reconnect subscribes anew without it
                    log.warning("could not unsubscribe from the stream bus: %s", error)

    async def publish(self, message: OutboundMessage) -> int:
        receivers = await self._redis.publish(
            self._channel((message.account_id, message.contact_id)), msgspec.json.encode(message)
        )
        return int(receivers)

    def listeners(self, account_id: int, contact_id: int) -> int:
        return self._local.listeners(account_id, contact_id)

    async def _read(self) -> None:
        while True:
            try:
                received = await self._pubsub.get_message(timeout=1.0)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("stream bus connection lost (%s); reconnecting", error)
                await asyncio.sleep(0.5)
                continue
            if received is not None:
                self._handle(received)

    def _handle(self, received: dict[str, Any]) -> None:
        kind, channel = received["type"], received["channel"]
        channel = channel.decode() if isinstance(channel, bytes) else channel
        if kind == "subscribe":
            confirmed = self._confirmations.get(channel)
            if confirmed is not None and not confirmed.done():
                confirmed.set_result(None)
        elif kind == "message":
            try:
                message = msgspec.json.decode(received["data"], type=OutboundMessage)
            except msgspec.DecodeError:
                log.warning("undecodable message on %s; dropped", channel)
                return
            self._local.put(message)


def stream_bus(redis_url: str | None, prefix: str) -> StreamBus:
    """Redis publish/subscribe on channels named ``<prefix><account>:<contact>`` when
    the gateway has a ``redis_url``, else in-process."""
    if redis_url:
        return RedisStreamBus(redis_url, prefix=prefix)
    return LocalStreamBus()
