"""The bus of every process sharing one Redis (the scale-out profile).

Each topic is a publish/subscribe channel, ``<live_channel_prefix><topic>``. A process
holds one pub/sub connection, subscribed to a topic's channel while one of its
subscribers is, and hands what arrives to its own queues (a :class:`LocalLiveBus`).
The answer to ``PUBLISH`` is therefore the number of processes a payload reached; zero
means nobody anywhere is listening, which a publisher may treat as a failed send (chat
retries it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import redis.asyncio as redis

from tollway.errors import ServiceUnavailable
from tollway.live.bus import LiveBus, LocalLiveBus

log = logging.getLogger("tollway.live")

CONFIRMATION_TIMEOUT = 5.0
"""Seconds a subscription may wait for Redis to confirm it."""


class RedisLiveBus(LiveBus):
    """Topics shared by every process on the Redis of ``url``, on channels named
    ``<prefix><topic>``."""

    def __init__(self, url: str, *, prefix: str) -> None:
        self._redis = redis.Redis.from_url(url, socket_connect_timeout=2)
        self._pubsub = self._redis.pubsub()
        self._prefix = prefix
        self._local = LocalLiveBus()
        self._confirmations: dict[str, asyncio.Future[None]] = {}
        self._lock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None

    def _channel(self, topic: str) -> str:
        return f"{self._prefix}{topic}"

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

    async def subscribe(self, topic: str) -> asyncio.Queue[bytes]:
        async with self._lock:
            first = not self._local.listeners(topic)
            queue = self._local.add(topic)
            if first:
                try:
                    await self._join(self._channel(topic))
                except Exception as error:
                    self._local.remove(topic, queue)
                    log.warning("could not subscribe to the live bus: %s", error)
                    raise ServiceUnavailable("Live updates are unavailable; try again") from None
        return queue

    async def _join(self, channel: str) -> None:
        confirmed = asyncio.get_running_loop().create_future()
        self._confirmations[channel] = confirmed
        try:
            await self._pubsub.subscribe(channel)
            if self._reader is None:
                self._reader = asyncio.create_task(self._read(), name="tollway-live-bus")
            # Subscribed once Redis says so: a payload published after this returns
            # reaches the queue.
            async with asyncio.timeout(CONFIRMATION_TIMEOUT):
                await confirmed
        finally:
            self._confirmations.pop(channel, None)

    async def unsubscribe(self, topic: str, queue: asyncio.Queue[bytes]) -> None:
        async with self._lock:
            if self._local.remove(topic, queue):
                try:
                    await self._pubsub.unsubscribe(self._channel(topic))
                except Exception as error:  # the reconnect subscribes anew without it
                    log.warning("could not unsubscribe from the live bus: %s", error)

    async def publish(self, topic: str, payload: bytes) -> int:
        """Raises what the Redis client raises when Redis cannot be reached."""
        receivers = await self._redis.publish(self._channel(topic), payload)
        return int(receivers)

    def listeners(self, topic: str) -> int:
        return self._local.listeners(topic)

    async def _read(self) -> None:
        while True:
            try:
                received = await self._pubsub.get_message(timeout=1.0)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                # The client reconnects on the next read and subscribes to the channels
                # it had again.
                log.warning("live bus connection lost (%s); reconnecting", error)
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
        elif kind == "message" and channel.startswith(self._prefix):
            self._local.put(channel.removeprefix(self._prefix), received["data"])
